package agents

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxArgPrompt is the longest prompt passed as one argument. Linux refuses a
// single argument over 128 KiB (MAX_ARG_STRLEN); longer prompts go on stdin
// where the CLI can read them there.
const maxArgPrompt = 100 << 10

// fitsInArgv reports whether the prompt can be one argument: short enough,
// and not starting with "-", which the CLI would take for a flag.
func fitsInArgv(prompt string) bool {
	return len(prompt) <= maxArgPrompt && !strings.HasPrefix(prompt, "-")
}

// codexAdapter runs `codex exec --json`. Options go before the `resume`
// subcommand because codex takes --sandbox only there.
type codexAdapter struct{}

func (codexAdapter) Kind() string                 { return "codex" }
func (codexAdapter) ReportsCost() bool            { return false }
func (codexAdapter) ReportsTokens() bool          { return true }
func (codexAdapter) Program(Request) string       { return "codex" }
func (codexAdapter) VersionArgs() []string        { return []string{"--version"} }
func (codexAdapter) CredentialEnv() []string      { return []string{"OPENAI_API_KEY", "CODEX_API_KEY"} }
func (codexAdapter) NewParser(req Request) Parser { return usageGuard{&codexParser{req: req}} }
func (codexAdapter) GenAIProvider() string        { return "openai" }

// input_tokens holds cached_input_tokens, as OpenAI's API reports them.
func (codexAdapter) InputHoldsCacheReads() bool { return true }

func (codexAdapter) NewActivityReader(dir string) ActivityReader {
	return &codexActivity{newActivityBase(dir)}
}

// NestedSessionEnv: Codex CLI's sandbox markers and the thread of its exec
// sessions.
func (codexAdapter) NestedSessionEnv() []string {
	return []string{"CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID"}
}

func (codexAdapter) StatePaths(u UserDirs) StatePaths {
	return StatePaths{Dirs: []string{u.Var("CODEX_HOME", filepath.Join(u.Home, ".codex"))}}
}

func (codexAdapter) Invocation(req Request) (Invocation, error) {
	argv := []string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"}
	if req.Model != "" {
		argv = append(argv, "--model", req.Model)
	}
	argv = append(argv, req.Args...)
	if req.SessionID != "" {
		argv = append(argv, "resume", req.SessionID)
	}
	if fitsInArgv(req.Prompt) {
		return Invocation{Argv: append(argv, req.Prompt)}, nil
	}
	// "-" makes codex read the prompt from stdin.
	return Invocation{Argv: append(argv, "-"), Stdin: req.Prompt, UseStdin: true}, nil
}

type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"` // error
	Usage    *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		CacheWriteTokens  int64 `json:"cache_write_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"` // turn.failed
	Item *struct {
		Type     string `json:"type"`
		ItemType string `json:"item_type"` // the name of the field in early releases
		Text     string `json:"text"`
	} `json:"item"`
}

type codexParser struct {
	req        Request
	res        Result
	completed  int
	failed     bool
	errText    string
	lastErrMsg string
}

// UsageSoFar is the usage of the turns finished so far. codex exec --json
// reports usage only in turn.completed (or turn.failed), summed over the
// turn's requests, and exec runs one turn: the figures come when the call's
// work is over, as its totals. Its events name no model.
func (p *codexParser) UsageSoFar() Usage {
	u := p.res.Usage()
	u.Final = p.completed > 0 || p.failed
	return u
}

// ResultPrinted: codex exec runs one turn, so its turn.completed or
// turn.failed is the call's final result.
func (p *codexParser) ResultPrinted() bool { return p.completed > 0 || p.failed }

func (p *codexParser) Line(line []byte) bool {
	var ev codexEvent
	if !decodeLine(line, &ev) {
		return false
	}
	switch ev.Type {
	case "thread.started":
		p.res.SessionID = ev.ThreadID
	case "turn.completed", "turn.failed":
		p.res.Turns++
		if ev.Usage != nil {
			p.res.InputTokens += ev.Usage.InputTokens
			p.res.CacheReadTokens += ev.Usage.CachedInputTokens
			p.res.CacheWriteTokens += ev.Usage.CacheWriteTokens
			p.res.OutputTokens += ev.Usage.OutputTokens
		}
		if ev.Type == "turn.completed" {
			p.completed++
			break
		}
		p.failed = true
		if ev.Error != nil && ev.Error.Message != "" {
			p.errText = ev.Error.Message
		} else {
			p.errText = p.lastErrMsg
		}
	case "error":
		// Codex also reports errors it recovers from (a reconnect), so an
		// error event alone does not fail the call; it explains a failure.
		p.lastErrMsg = ev.Message
	case "item.completed":
		if ev.Item != nil && (ev.Item.Type == "agent_message" || ev.Item.ItemType == "assistant_message") {
			p.res.FinalText = lastBytes(ev.Item.Text, maxFinalText)
		}
	}
	return false
}

func (p *codexParser) Finish(exitCode int, tail []byte) Result {
	res := p.res
	res.Signal, res.SignalText = DetectSignal(res.FinalText, p.req.promise(), p.req.Prompt)
	switch {
	case p.failed:
		res.ErrorText = p.errText
	case exitCode != 0:
		res.ErrorText = fmt.Sprintf("codex exited with code %d", exitCode)
	case p.completed == 0:
		res.ErrorText = "codex ended without completing a turn"
	default:
		return res
	}
	if p.lastErrMsg != "" && !strings.Contains(res.ErrorText, p.lastErrMsg) {
		res.ErrorText += ": " + p.lastErrMsg
	} else if !p.failed {
		res.addTail(tail)
	}
	res.fail(codexClass(res.ErrorText))
	if res.Class == ClassRateLimit {
		if t := codexResetAt(res.ErrorText, time.Now()); !t.IsZero() {
			res.ResetAt = t
		}
	}
	return res
}

// codexClass is classifyText plus what codex says in words of its own: its
// message for a 5xx after its retries speaks of "high demand".
func codexClass(text string) Class {
	if c := classifyText(text); c != ClassError {
		return c
	}
	if strings.Contains(strings.ToLower(text), "high demand") {
		return ClassServer
	}
	return ClassError
}

// codexRetryAt is how codex writes the reset of a usage limit (the
// resets_at of the API's usage_limit_reached error) in its own zone: "try
// again at Nov 25th, 2026 1:21 AM", or "try again at 1:21 AM" on the same day.
var codexRetryAt = lazyRegexp(`(?i)try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2}) ?([AP]M)`)

// codexResetAt reads codex's reset time, in the host's zone (codex prints
// its local time); else whatever parseResetAt finds ("try again in 20s").
func codexResetAt(s string, now time.Time) time.Time {
	m := codexRetryAt().FindStringSubmatch(s)
	if m == nil {
		return parseResetAt(s, now)
	}
	if m[1] == "" {
		t, _ := nextClock(m[4], m[5], m[6], "", now)
		return t
	}
	t, err := time.ParseInLocation("Jan 2 2006 3:04 PM",
		fmt.Sprintf("%s %s %s %s:%s %s", m[1], m[2], m[3], m[4], m[5], strings.ToUpper(m[6])), now.Location())
	if err != nil {
		return parseResetAt(s, now)
	}
	return t
}

// codexActivity reads `codex exec --json`: commands as they start (and the
// ones that fail), file changes, agent messages.
type codexActivity struct{ activityBase }

func (a *codexActivity) Line(line []byte) []Activity {
	if !jsonLine(line, "item.started") && !jsonLine(line, "item.completed") {
		return nil
	}
	var ev struct {
		Type string `json:"type"`
		Item struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Command  string `json:"command"`
			Text     string `json:"text"`
			ExitCode *int   `json:"exit_code"`
			Output   string `json:"aggregated_output"`
			Status   string `json:"status"`
			Changes  []struct {
				Path string `json:"path"`
				Kind string `json:"kind"`
			} `json:"changes"`
			Server string `json:"server"`
			Tool   string `json:"tool"`
			Query  string `json:"query"`
		} `json:"item"`
	}
	if !decodeLine(line, &ev) {
		return nil
	}
	it := ev.Item
	switch {
	case it.Type == "command_execution" && ev.Type == "item.started":
		return []Activity{tool("Bash", shellCommand(it.Command))}
	case it.Type == "command_execution" && ev.Type == "item.completed" && (it.ExitCode != nil && *it.ExitCode != 0 || it.Status == "failed"):
		code := ""
		if it.ExitCode != nil {
			code = "exit " + strconv.Itoa(*it.ExitCode) + ": "
		}
		return []Activity{toolError("Bash", code+firstLine(it.Output))}
	case it.Type == "file_change" && ev.Type == "item.completed":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, a.rel(c.Path))
		}
		return []Activity{tool("Edit", strings.Join(paths, " "))}
	case it.Type == "mcp_tool_call" && ev.Type == "item.started":
		return []Activity{tool(it.Server+"."+it.Tool, "")}
	case it.Type == "web_search" && ev.Type == "item.started":
		return []Activity{tool("WebSearch", it.Query)}
	case it.Type == "agent_message" && ev.Type == "item.completed":
		return message(it.Text)
	}
	return nil
}

func (a *codexActivity) Flush() []Activity { return nil }

// shellCommand takes the command out of codex's `bash -lc '...'` wrapper.
func shellCommand(c string) string {
	for _, p := range []string{"bash -lc ", "/bin/bash -lc ", "sh -c "} {
		if rest, ok := strings.CutPrefix(c, p); ok {
			if u, err := strconv.Unquote(rest); err == nil {
				return u
			}
			if len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
				return rest[1 : len(rest)-1]
			}
			return rest
		}
	}
	return c
}
