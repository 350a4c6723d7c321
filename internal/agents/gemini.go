package agents

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// geminiAdapter runs Gemini CLI headless with stream-json output, its tool
// calls approved (--approval-mode yolo) and the work tree trusted
// (--skip-trust: in a folder it has not been told to trust, Gemini CLI
// turns yolo back into default approval, and a headless call can then
// approve no edit).
type geminiAdapter struct{}

func (geminiAdapter) Kind() string                 { return "gemini" }
func (geminiAdapter) ReportsCost() bool            { return false }
func (geminiAdapter) ReportsTokens() bool          { return true }
func (geminiAdapter) Program(Request) string       { return "gemini" }
func (geminiAdapter) VersionArgs() []string        { return []string{"--version"} }
func (geminiAdapter) NewParser(req Request) Parser { return usageGuard{&geminiParser{req: req}} }
func (geminiAdapter) GenAIProvider() string        { return "gcp.gemini" }

// input_tokens holds the cached ones, as Google's API reports them.
func (geminiAdapter) InputHoldsCacheReads() bool { return true }

func (geminiAdapter) NewActivityReader(dir string) ActivityReader {
	return &geminiActivity{activityBase: newActivityBase(dir)}
}

// NestedSessionEnv: Gemini CLI's identification variable, its relaunch
// guard, and the outer session's IDE companion.
func (geminiAdapter) NestedSessionEnv() []string {
	return []string{"GEMINI_CLI", "GEMINI_CLI_NO_RELAUNCH", "GEMINI_CLI_IDE_SERVER_PORT", "GEMINI_CLI_IDE_WORKSPACE_PATH"}
}

func (geminiAdapter) StatePaths(u UserDirs) StatePaths {
	return StatePaths{Dirs: []string{filepath.Join(u.Home, ".gemini")}}
}

func (geminiAdapter) CredentialEnv() []string {
	return []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"}
}

// stdinPrompt stands in the argv for a prompt that does not fit there; the
// CLI appends what it reads on stdin to the -p prompt.
const stdinPrompt = "Follow the instructions given on standard input."

func (geminiAdapter) Invocation(req Request) (Invocation, error) {
	inv := Invocation{}
	prompt := req.Prompt
	if !fitsInArgv(prompt) {
		prompt, inv.Stdin, inv.UseStdin = stdinPrompt, req.Prompt, true
	}
	argv := []string{"gemini", "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust"}
	if req.Model != "" {
		argv = append(argv, "-m", req.Model)
	}
	if req.SessionID != "" {
		argv = append(argv, "--resume", req.SessionID)
	}
	inv.Argv = append(argv, req.Args...)
	return inv, nil
}

// Gemini CLI's documented exit codes.
const (
	geminiExitAuth      = 41
	geminiExitInput     = 42
	geminiExitConfig    = 52
	geminiExitTurnLimit = 53
	geminiExitCancelled = 130
)

type geminiEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"` // init: the -m model, or "auto" for the router
	Role      string `json:"role"`
	Content   string `json:"content"`
	Delta     bool   `json:"delta"`
	Severity  string `json:"severity"`
	Message   string `json:"message"` // error
	Status    string `json:"status"`  // result
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		InputTokens  int64                       `json:"input_tokens"`
		OutputTokens int64                       `json:"output_tokens"`
		Cached       int64                       `json:"cached"`
		Models       map[string]geminiModelStats `json:"models"`
	} `json:"stats"`
}

// geminiModelStats is one model's share of a call in the result's
// stats.models.
type geminiModelStats struct {
	TotalTokens int64 `json:"total_tokens"`
}

// geminiRouted reports whether the init event's model is one of Gemini
// CLI's router settings ("auto", "auto-gemini-2.5", ...), which pick the
// model of each request: not a model a price applies to.
func geminiRouted(model string) bool {
	return model == "auto" || strings.HasPrefix(model, "auto-")
}

// geminiMainModel is the model of the result's stats.models that used the
// most tokens (the router's classifier requests go to a smaller model than
// the main loop's), ties to the first name in order; "" when there is none.
func geminiMainModel(models map[string]geminiModelStats) string {
	best, most := "", int64(-1)
	for name, m := range models {
		if name == "" || len(name) > maxModelName || !plainWord(name) {
			continue
		}
		if m.TotalTokens > most || (m.TotalTokens == most && name < best) {
			best, most = name, m.TotalTokens
		}
	}
	return best
}

type geminiParser struct {
	req     Request
	res     Result
	msg     strings.Builder // the assistant message being streamed
	inMsg   bool            // the last event was part of an assistant message
	result  *geminiEvent
	lastErr string
}

// UsageSoFar is the result's figures once it came, else nothing: Gemini CLI
// (0.61) prints usage only in its final result event (stats), no message
// or tool event carries any. The result names the models it used
// (stats.models); the init event the one given with -m.
func (p *geminiParser) UsageSoFar() Usage {
	u := p.res.Usage()
	u.Final = p.result != nil
	return u
}

// ResultPrinted: the result event is the call's final result.
func (p *geminiParser) ResultPrinted() bool { return p.result != nil }

func (p *geminiParser) Line(line []byte) bool {
	var ev geminiEvent
	if !decodeLine(line, &ev) {
		return false
	}
	if ev.Type != "message" || ev.Role != "assistant" {
		p.inMsg = false
	}
	switch ev.Type {
	case "init":
		p.res.SessionID = ev.SessionID
		if !geminiRouted(ev.Model) && len(ev.Model) <= maxModelName && plainWord(ev.Model) {
			p.res.Model = ev.Model
		}
	case "message":
		if ev.Role != "assistant" {
			break
		}
		// A message after a tool call starts a new turn; only the last
		// message is the agent's final word.
		if !p.inMsg || !ev.Delta {
			p.msg.Reset()
			p.res.Turns++
		}
		p.inMsg = true
		p.msg.WriteString(ev.Content)
		if p.msg.Len() > 2*maxFinalText {
			kept := lastBytes(p.msg.String(), maxFinalText)
			p.msg.Reset()
			p.msg.WriteString(kept)
		}
	case "error":
		if ev.Message != "" {
			p.lastErr = ev.Message
		}
	case "result":
		r := ev
		p.result = &r
		if ev.Stats != nil {
			p.res.InputTokens = ev.Stats.InputTokens
			p.res.OutputTokens = ev.Stats.OutputTokens
			p.res.CacheReadTokens = ev.Stats.Cached
			if m := geminiMainModel(ev.Stats.Models); m != "" {
				p.res.Model = m
			}
		}
	}
	return false
}

func (p *geminiParser) Finish(exitCode int, tail []byte) Result {
	res := p.res
	res.FinalText = lastBytes(p.msg.String(), maxFinalText)
	res.Signal, res.SignalText = DetectSignal(res.FinalText, p.req.promise(), p.req.Prompt)
	r := p.result
	switch {
	case r != nil && r.Status == "error":
		res.ErrorText = "gemini reported an error"
		if r.Error != nil && r.Error.Message != "" {
			res.ErrorText = r.Error.Message
		}
	case exitCode != 0:
		res.ErrorText = fmt.Sprintf("gemini exited with code %d", exitCode)
	case r == nil:
		res.ErrorText = "gemini ended without a result"
	default:
		return res
	}
	if p.lastErr != "" && !strings.Contains(res.ErrorText, p.lastErr) {
		res.ErrorText += ": " + p.lastErr
	} else if r == nil {
		res.addTail(tail)
	}
	switch exitCode {
	case geminiExitAuth:
		res.fail(ClassAuth)
	case geminiExitTurnLimit:
		res.fail(ClassMaxTurns)
	case geminiExitInput, geminiExitConfig, geminiExitCancelled:
		res.fail(ClassError)
	default:
		res.fail(classifyText(res.ErrorText))
	}
	if res.Class == ClassRateLimit {
		if at := geminiResetAt(res.ErrorText, time.Now()); !at.IsZero() {
			res.ResetAt = at
		}
	}
	return res
}

// Gemini CLI passes on the API's quota error: its message ends "Please
// retry in 35.53s." and, when the delay is too long for the CLI to wait
// (a TerminalQuotaError), it adds "Suggested retry after 3600s." from the
// error's google.rpc.RetryInfo.
var geminiRetry = lazyRegexp(`(?i)\b(?:retry in|retry after)\s+([0-9]+(?:\.[0-9]+)?)(ms|s)\b`)

// geminiResetAt is the latest reset the message names, relative to now;
// zero when it names none.
func geminiResetAt(msg string, now time.Time) time.Time {
	var longest time.Duration
	for _, m := range geminiRetry().FindAllStringSubmatch(msg, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || v > 1e7 {
			continue
		}
		d := time.Duration(v * float64(time.Second))
		if m[2] == "ms" {
			d = time.Duration(v * float64(time.Millisecond))
		}
		longest = max(longest, d)
	}
	if longest <= 0 {
		return time.Time{}
	}
	// Rounded up: waiting until then is never too early.
	at := now.Add(longest)
	if t := at.Truncate(time.Second); t.Before(at) {
		at = t.Add(time.Second)
	}
	return at
}

// geminiActivity reads Gemini CLI's stream-json: tool_use and tool_result
// events, and assistant messages, which come in pieces (delta) and are
// shown once a message is whole.
type geminiActivity struct {
	activityBase
	msg strings.Builder
}

var geminiTools = map[string]string{
	"run_shell_command":   "Bash",
	"write_file":          "Write",
	"replace":             "Edit",
	"read_file":           "Read",
	"read_many_files":     "Read",
	"glob":                "Glob",
	"search_file_content": "Grep",
	"list_directory":      "LS",
	"web_fetch":           "WebFetch",
	"google_web_search":   "WebSearch",
}

func (a *geminiActivity) Line(line []byte) []Activity {
	var ev struct {
		Type       string         `json:"type"`
		Role       string         `json:"role"`
		Content    string         `json:"content"`
		Delta      bool           `json:"delta"`
		ToolName   string         `json:"tool_name"`
		ToolID     string         `json:"tool_id"`
		Parameters map[string]any `json:"parameters"`
		Status     string         `json:"status"`
		Output     string         `json:"output"`
		Error      *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if !decodeLine(line, &ev) {
		return nil
	}
	if ev.Type == "message" && ev.Role == "assistant" {
		if a.msg.Len() < 4*maxActivityText {
			a.msg.WriteString(ev.Content)
		}
		if ev.Delta {
			return nil
		}
	}
	out := a.Flush()
	switch ev.Type {
	case "tool_use":
		name := ev.ToolName
		if n, ok := geminiTools[name]; ok {
			name = n
		}
		a.open(ev.ToolID, name)
		out = append(out, tool(name, a.summary(ev.Parameters)))
	case "tool_result":
		name := a.closeTool(ev.ToolID)
		if ev.Status == "error" {
			text := ev.Output
			if ev.Error != nil && ev.Error.Message != "" {
				text = ev.Error.Message
			}
			out = append(out, toolError(name, text))
		}
	}
	return out
}

func (a *geminiActivity) Flush() []Activity {
	if a.msg.Len() == 0 {
		return nil
	}
	text := a.msg.String()
	a.msg.Reset()
	return message(text)
}
