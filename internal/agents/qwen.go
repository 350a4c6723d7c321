package agents

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// qwenAdapter runs Qwen Code headless with stream-json output: system/init,
// assistant and user messages, and one result event, shaped as Claude
// Code's, with the result's error as an object.
type qwenAdapter struct{}

func (qwenAdapter) Kind() string                 { return "qwen" }
func (qwenAdapter) ReportsCost() bool            { return false }
func (qwenAdapter) ReportsTokens() bool          { return true }
func (qwenAdapter) Program(Request) string       { return "qwen" }
func (qwenAdapter) VersionArgs() []string        { return []string{"--version"} }
func (qwenAdapter) CredentialEnv() []string      { return []string{"OPENAI_API_KEY"} }
func (qwenAdapter) NewParser(req Request) Parser { return usageGuard{&qwenParser{req: req}} }
func (qwenAdapter) GenAIProvider() string        { return "alibaba" }

// input_tokens is the prompt's token count, cached ones included (Qwen
// Code is a fork of Gemini CLI).
func (qwenAdapter) InputHoldsCacheReads() bool { return true }

// NewActivityReader: Qwen Code streams Claude Code's events.
func (qwenAdapter) NewActivityReader(dir string) ActivityReader {
	return &claudeActivity{newActivityBase(dir)}
}

// NestedSessionEnv: Gemini CLI's variables, under Qwen Code's own names.
func (qwenAdapter) NestedSessionEnv() []string {
	return []string{"QWEN_CODE", "QWEN_CODE_NO_RELAUNCH", "QWEN_CODE_IDE_SERVER_PORT", "QWEN_CODE_IDE_WORKSPACE_PATH"}
}

func (qwenAdapter) StatePaths(u UserDirs) StatePaths {
	return StatePaths{Dirs: []string{filepath.Join(u.Home, ".qwen")}}
}

func (qwenAdapter) Invocation(req Request) (Invocation, error) {
	inv := Invocation{}
	prompt := req.Prompt
	if !fitsInArgv(prompt) {
		// Qwen Code appends its stdin to the -p prompt.
		prompt, inv.Stdin, inv.UseStdin = stdinPrompt, req.Prompt, true
	}
	argv := []string{"qwen", "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"}
	if req.Model != "" {
		argv = append(argv, "-m", req.Model)
	}
	if req.MaxTurns > 0 {
		argv = append(argv, "--max-session-turns", fmt.Sprint(req.MaxTurns))
	}
	if req.SessionID != "" {
		argv = append(argv, "--resume", req.SessionID)
	}
	inv.Argv = append(argv, req.Args...)
	return inv, nil
}

type qwenEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"` // system/init
	Message   *struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage *claudeUsage `json:"usage"`
	} `json:"message"`
	// result
	IsError  bool            `json:"is_error"`
	Result   *string         `json:"result"`
	NumTurns int             `json:"num_turns"`
	Error    json.RawMessage `json:"error"` // {"message": ...}, or a string
	Usage    *struct {
		InputTokens          int64 `json:"input_tokens"`
		OutputTokens         int64 `json:"output_tokens"`
		CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// qwenAPIError is how Qwen Code reports a failed API call in an assistant
// message and the result: "[API Error: 429 Rate limit reached ...]".
var qwenAPIError = lazyRegexp(`\[API Error: (?:(\d{3})\b)?`)

type qwenParser struct {
	req       Request
	sessionID string
	lastText  string
	apiError  string // the last assistant message that reported an API error
	result    *qwenEvent
	running   claudeRunning // the assistant messages' usage, as Claude Code's
	final     Usage         // the highest totals the result events gave
}

// UsageSoFar is the call's usage: the result's totals once the result
// came, else the sum of the assistant messages' usage so far (Qwen Code
// prints each API response's usage with its assistant message, a message
// id counting once as with Claude Code). No cost: Qwen Code reports none.
func (p *qwenParser) UsageSoFar() Usage {
	u := p.running.sum()
	if p.result != nil {
		// The results' totals are the call's, so no smaller than its
		// messages' sum or an earlier result: a count one gives lower (or
		// leaves out) stays, and the usage never goes down.
		model := u.Model
		u = u.atLeast(p.final)
		u.Model, u.Final = cmp.Or(model, p.running.model), true
	}
	return u
}

// ResultPrinted: the result event is the call's final result, as with
// Claude Code.
func (p *qwenParser) ResultPrinted() bool { return p.result != nil }

func (p *qwenParser) Line(line []byte) bool {
	var ev qwenEvent
	if !decodeLine(line, &ev) {
		return false
	}
	if ev.SessionID != "" {
		p.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" && ev.Model != "" && p.running.model == "" {
			p.running.model = ev.Model
		}
	case "assistant":
		if ev.Message == nil {
			break
		}
		var mu claudeUsage
		if ev.Message.Usage != nil {
			mu = *ev.Message.Usage
		}
		p.running.add(ev.Message.ID, ev.Message.Model, mu)
		var parts []string
		for _, c := range ev.Message.Content {
			if c.Type == "text" && c.Text != "" {
				parts = append(parts, c.Text)
			}
		}
		if len(parts) == 0 {
			break
		}
		text := lastBytes(strings.Join(parts, "\n"), maxFinalText)
		if qwenAPIError().MatchString(text) {
			p.apiError = lastLines(text, 3)
			break
		}
		p.lastText = text
	case "result":
		r := ev
		p.result = &r
		if r.Usage != nil {
			p.final = p.final.atLeast(sanitizeUsage(Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
				CacheReadTokens: r.Usage.CacheReadInputTokens}))
		}
	}
	return false
}

func (p *qwenParser) Finish(exitCode int, tail []byte) Result {
	res := Result{SessionID: p.sessionID, FinalText: p.lastText}
	rs := p.result
	if rs != nil {
		if rs.SessionID != "" {
			res.SessionID = rs.SessionID
		}
		if rs.Result != nil && !rs.IsError {
			res.FinalText = lastBytes(*rs.Result, maxFinalText)
		}
		res.Turns = rs.NumTurns
	}
	// The result's totals when it came; else (a call stopped or broken off
	// before its result) what the messages so far used.
	u := p.UsageSoFar()
	res.InputTokens, res.OutputTokens, res.CacheReadTokens, res.CacheWriteTokens = u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens
	res.Model = u.Model
	res.Signal, res.SignalText = DetectSignal(res.FinalText, p.req.promise(), p.req.Prompt)
	switch {
	case rs == nil:
		res.ErrorText = fmt.Sprintf("qwen exited with code %d without a result", exitCode)
		if p.apiError != "" {
			res.ErrorText += ": " + p.apiError
		} else {
			res.addTail(tail)
		}
	case rs.IsError || rs.Subtype != "success":
		res.ErrorText = qwenResultError(rs)
		if res.ErrorText == "" {
			res.ErrorText = p.apiError
		}
		if res.ErrorText == "" {
			res.ErrorText = "qwen reported an error (" + rs.Subtype + ")"
		}
	case exitCode != 0:
		res.ErrorText = fmt.Sprintf("qwen exited with code %d after reporting success", exitCode)
		res.addTail(tail)
		res.fail(ClassError)
		return res
	default:
		return res
	}
	res.fail(qwenClass(res.ErrorText))
	return res
}

// qwenResultError is the message of the result's error: an object with a
// message, or a string.
func qwenResultError(rs *qwenEvent) string {
	if len(rs.Error) == 0 {
		return ""
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(rs.Error, &obj) == nil && obj.Message != "" {
		return lastLines(obj.Message, 3)
	}
	var s string
	if json.Unmarshal(rs.Error, &s) == nil {
		return lastLines(s, 3)
	}
	return ""
}

// qwenClass reads the HTTP status of "[API Error: NNN ...]" first, then
// the text.
func qwenClass(text string) Class {
	if m := qwenAPIError().FindStringSubmatch(text); m != nil && m[1] != "" {
		var status int
		fmt.Sscan(m[1], &status)
		if c := classifyStatus(status); c != ClassNone && c != ClassError {
			return c
		}
	}
	if strings.Contains(strings.ToLower(text), "max session turns") {
		return ClassMaxTurns
	}
	return classifyText(text)
}
