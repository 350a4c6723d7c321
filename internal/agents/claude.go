package agents

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// claudeAdapter runs Claude Code headless with stream-json output. The prompt
// goes on stdin, not as the -p argument: Linux caps one argument at 128 KiB
// and a prompt that carries feedback can grow past that.
type claudeAdapter struct{}

func (claudeAdapter) Kind() string                 { return "claude" }
func (claudeAdapter) ReportsCost() bool            { return true }
func (claudeAdapter) ReportsTokens() bool          { return true }
func (claudeAdapter) Program(Request) string       { return "claude" }
func (claudeAdapter) VersionArgs() []string        { return []string{"--version"} }
func (claudeAdapter) NewParser(req Request) Parser { return usageGuard{&claudeParser{req: req}} }

func (claudeAdapter) GenAIProvider() string { return "anthropic" }

// Anthropic's API counts cache reads apart from the input tokens.
func (claudeAdapter) InputHoldsCacheReads() bool { return false }

func (claudeAdapter) NewActivityReader(dir string) ActivityReader {
	return &claudeActivity{newActivityBase(dir)}
}

func (claudeAdapter) CredentialEnv() []string {
	return []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}
}

// NestedSessionEnv: what Claude Code sets for its Bash tool and
// subprocesses, and the IDE connection of the outer session.
func (claudeAdapter) NestedSessionEnv() []string {
	return []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT",
		"CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_SESSION_ATTENDED",
		"CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS", "CLAUDE_PID"}
}

// StatePaths: Claude Code keeps its settings, sessions and backups in
// ~/.claude and its account and project state in ~/.claude.json, which it
// rewrites in place (an empty object is what it starts from).
func (claudeAdapter) StatePaths(u UserDirs) StatePaths {
	dir := u.Var("CLAUDE_CONFIG_DIR", filepath.Join(u.Home, ".claude"))
	return StatePaths{Dirs: []string{dir}, Files: []StateFile{{Path: filepath.Join(u.Home, ".claude.json"), Initial: "{}\n"}}}
}

// StartProblem: run as root with permission mode bypassPermissions, Claude
// Code insists on IS_SANDBOX=1 in its environment, to confirm the machine
// is disposable.
func (claudeAdapter) StartProblem(permissionMode string, euid int, env []string) string {
	if euid != 0 {
		return ""
	}
	if permissionMode == "" {
		permissionMode = DefaultPermissionMode
	}
	if permissionMode != "bypassPermissions" {
		return ""
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "IS_SANDBOX="); ok && v == "1" {
			return ""
		}
	}
	return "runr runs as root and agent.permission_mode is bypassPermissions: Claude Code refuses that " +
		"unless IS_SANDBOX=1 is set. If this machine or container is disposable, export IS_SANDBOX=1 " +
		"before runr; otherwise run runr as an ordinary user or set agent.permission_mode to acceptEdits."
}

func (claudeAdapter) Invocation(req Request) (Invocation, error) {
	mode := req.PermissionMode
	if mode == "" {
		mode = DefaultPermissionMode
	}
	argv := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", mode}
	if req.Model != "" {
		argv = append(argv, "--model", req.Model)
	}
	if req.MaxTurns > 0 {
		argv = append(argv, "--max-turns", strconv.Itoa(req.MaxTurns))
	}
	if req.MaxBudgetUSD > 0 {
		argv = append(argv, "--max-budget-usd", formatUSD(req.MaxBudgetUSD))
	}
	if req.SessionID != "" {
		argv = append(argv, "--resume", req.SessionID)
	}
	argv = append(argv, req.Args...)
	return Invocation{Argv: argv, Stdin: req.Prompt, UseStdin: true}, nil
}

// formatUSD rounds down to 1/10000 USD, so the cap passed on never exceeds
// what is left of the budget.
func formatUSD(v float64) string {
	return strconv.FormatFloat(math.Floor(v*10000)/10000, 'f', -1, 64)
}

// claudeEvent holds the fields runr reads from any stream-json event or the
// single object of --output-format json; the rest is ignored.
type claudeEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"` // system/init

	// assistant
	Message *struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage *claudeUsage `json:"usage"`
	} `json:"message"`
	Error          string `json:"error"` // assistant and system/api_retry
	APIErrorStatus *int   `json:"api_error_status"`

	// system/api_retry
	ErrorStatus *int `json:"error_status"`

	// rate_limit_event: the state of the subscription's usage limits
	RateLimitInfo *struct {
		Status        string `json:"status"` // allowed | allowed_warning | rejected
		ResetsAt      int64  `json:"resetsAt"`
		RateLimitType string `json:"rateLimitType"` // five_hour, seven_day, ...
	} `json:"rate_limit_info"`

	// result
	IsError      bool         `json:"is_error"`
	Result       *string      `json:"result"`
	Errors       []string     `json:"errors"`
	TotalCostUSD *float64     `json:"total_cost_usd"`
	NumTurns     int          `json:"num_turns"`
	Usage        *claudeUsage `json:"usage"`
}

// claudeUsage is the usage of one API response (an assistant message) or,
// in the result, of the whole call.
type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

func (u claudeUsage) usage() Usage {
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

// claudeRunning adds up the usage of a call's assistant messages as they
// stream. Claude Code prints one assistant event per content block, each
// with the usage of the whole API response, so a message id counts once:
// with the largest figures any of its events gave (a later event of the
// same response may carry more output tokens). Ids are remembered in a
// bounded set; a response's events come together, so an id that fell out of
// it does not come back.
type claudeRunning struct {
	total Usage               // the messages that are done
	cur   string              // the message id being streamed
	curU  Usage               // its usage so far
	seen  map[string]struct{} // ids already added to total
	order []string            // seen, oldest first
	model string              // the model of the last message
}

const maxSeenMessages = 4096

func (r *claudeRunning) add(id, model string, u claudeUsage) {
	// "<synthetic>" marks a message Claude Code wrote itself (an API
	// error), not a model: the call's model stays the one it used.
	if model != "" && model != "<synthetic>" {
		r.model = model
	}
	nu := u.usage()
	if id == "" || id != r.cur {
		if id != "" {
			if _, dup := r.seen[id]; dup {
				return
			}
		}
		r.fold()
		r.cur, r.curU = id, nu
		if id == "" {
			// A message without an id cannot be told apart: it counts once, now.
			r.fold()
		}
		return
	}
	r.curU.InputTokens = max(r.curU.InputTokens, nu.InputTokens)
	r.curU.OutputTokens = max(r.curU.OutputTokens, nu.OutputTokens)
	r.curU.CacheReadTokens = max(r.curU.CacheReadTokens, nu.CacheReadTokens)
	r.curU.CacheWriteTokens = max(r.curU.CacheWriteTokens, nu.CacheWriteTokens)
}

// fold adds the current message to the total.
func (r *claudeRunning) fold() {
	r.total.InputTokens += r.curU.InputTokens
	r.total.OutputTokens += r.curU.OutputTokens
	r.total.CacheReadTokens += r.curU.CacheReadTokens
	r.total.CacheWriteTokens += r.curU.CacheWriteTokens
	if r.cur != "" {
		if r.seen == nil {
			r.seen = map[string]struct{}{}
		}
		r.seen[r.cur] = struct{}{}
		r.order = append(r.order, r.cur)
		if len(r.order) > maxSeenMessages {
			delete(r.seen, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.cur, r.curU = "", Usage{}
}

// sum is the usage of every message so far.
func (r *claudeRunning) sum() Usage {
	u := r.total
	u.InputTokens += r.curU.InputTokens
	u.OutputTokens += r.curU.OutputTokens
	u.CacheReadTokens += r.curU.CacheReadTokens
	u.CacheWriteTokens += r.curU.CacheWriteTokens
	u.Model = r.model
	return u
}

type claudeParser struct {
	req       Request
	sessionID string
	lastText  string // the last assistant message's text
	apiError  string // the error field of the last assistant message
	apiStatus int
	retry     string // the error of the last api_retry
	retryCode int
	result    *claudeEvent
	final     Usage // the largest totals and cost the result events gave
	running   claudeRunning
	// A rate_limit_event that said the subscription's limit rejected the
	// call: when it resets and which window it is.
	limitRejected bool
	limitReset    time.Time
	limitWindow   string
}

// UsageSoFar is the call's usage: the result's totals and cost once the
// result came, else the sum of the assistant messages so far (no cost: the
// CLI reports it only in the result). The result's totals are the call's,
// so no smaller than its messages' sum: a count the result gives lower (or
// leaves out) stays at the sum, so that the usage never goes down.
func (p *claudeParser) UsageSoFar() Usage {
	u := p.running.sum()
	if p.result != nil {
		model := u.Model
		u = u.atLeast(p.final)
		u.Model, u.Final = model, true
	}
	return u
}

// ResultPrinted: the result event is the call's final result.
func (p *claudeParser) ResultPrinted() bool { return p.result != nil }

func (p *claudeParser) Line(line []byte) bool {
	var ev claudeEvent
	if !decodeLine(line, &ev) {
		return false
	}
	if ev.SessionID != "" {
		p.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "assistant":
		if ev.Message != nil && ev.Message.Usage != nil {
			p.running.add(ev.Message.ID, ev.Message.Model, *ev.Message.Usage)
		}
		if ev.Message != nil {
			var parts []string
			for _, c := range ev.Message.Content {
				if c.Type == "text" && c.Text != "" {
					parts = append(parts, c.Text)
				}
			}
			if len(parts) > 0 {
				p.lastText = lastBytes(strings.Join(parts, "\n"), maxFinalText)
			}
		}
		if ev.Error != "" {
			p.apiError = ev.Error
			if ev.APIErrorStatus != nil {
				p.apiStatus = *ev.APIErrorStatus
			}
		}
	case "system":
		if ev.Subtype == "init" && ev.Model != "" && p.running.model == "" {
			p.running.model = ev.Model
		}
		if ev.Subtype == "api_retry" {
			p.retry, p.retryCode = ev.Error, 0
			if ev.ErrorStatus != nil {
				p.retryCode = *ev.ErrorStatus
			}
			// Retrying a rejected credential cannot succeed; stop now rather
			// than wait out the CLI's backoff.
			return p.retry == "authentication_failed" || p.retryCode == 401
		}
	case "rate_limit_event":
		if i := ev.RateLimitInfo; i != nil && i.Status == "rejected" {
			p.limitRejected, p.limitWindow = true, i.RateLimitType
			p.limitReset = time.Time{}
			if i.ResetsAt > 0 {
				p.limitReset = time.Unix(i.ResetsAt, 0).UTC()
			}
		}
	case "result":
		r := ev
		p.result = &r
		var f Usage
		if r.Usage != nil {
			f = r.Usage.usage()
		}
		if r.TotalCostUSD != nil {
			f.CostUSD, f.CostKnown = *r.TotalCostUSD, true
		}
		p.final = p.final.atLeast(sanitizeUsage(f))
	}
	return false
}

func (p *claudeParser) Finish(exitCode int, tail []byte) Result {
	res := Result{SessionID: p.sessionID, FinalText: p.lastText}
	// The result's totals and cost when it came; else (a call stopped or
	// broken off before its result) what the messages so far used.
	u := p.UsageSoFar()
	res.InputTokens, res.OutputTokens, res.CacheReadTokens, res.CacheWriteTokens = u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens
	res.CostUSD, res.CostKnown, res.Model = u.CostUSD, u.CostKnown, u.Model
	rs := p.result
	if rs != nil {
		if rs.SessionID != "" {
			res.SessionID = rs.SessionID
		}
		if rs.Result != nil {
			res.FinalText = lastBytes(*rs.Result, maxFinalText)
		}
		res.Turns = rs.NumTurns
	}
	res.Signal, res.SignalText = DetectSignal(res.FinalText, p.req.promise(), p.req.Prompt)

	switch {
	case rs == nil:
		res.IsError = true
		res.ErrorText = p.noResultError(exitCode, tail)
		res.Class = p.classify(res.ErrorText)
	case rs.Subtype == "error_max_turns":
		res.IsError, res.Class = true, ClassMaxTurns
		res.ErrorText = p.resultError(rs, "claude reached its turn limit (--max-turns)")
	case rs.Subtype == "error_max_budget_usd":
		res.IsError, res.Class = true, ClassBudget
		res.ErrorText = p.resultError(rs, "claude reached the cost cap (--max-budget-usd)")
	case rs.IsError || rs.Subtype != "success":
		res.IsError = true
		res.ErrorText = p.resultError(rs, "claude reported an error ("+rs.Subtype+")")
		if rs.APIErrorStatus != nil {
			res.Class = classifyStatus(*rs.APIErrorStatus)
		}
		if res.Class == ClassNone || res.Class == ClassError {
			res.Class = p.classify(res.ErrorText)
		}
	case exitCode != 0:
		// A success result followed by a failing exit (a hook, a crash on the
		// way out) is not something to build on.
		res.IsError, res.Class = true, ClassError
		res.ErrorText = fmt.Sprintf("claude exited with code %d after reporting success", exitCode)
		if t := lastLines(string(tail), 3); t != "" {
			res.ErrorText += ": " + t
		}
	}
	if res.Class == ClassRateLimit {
		res.ResetAt = parseResetAt(res.ErrorText+"\n"+string(tail), time.Now())
		if p.limitRejected {
			// The rate_limit_event is the structured record of the same
			// limit, to the second where the text may name only the
			// minute ("resets 4:38am"): its reset wins, and its window.
			if !p.limitReset.IsZero() {
				res.ResetAt = p.limitReset
			}
			if p.limitWindow != "" {
				res.Limit = LimitUsageWindow
			}
		}
	}
	return res
}

// noResultError says why a call ended without a result event: what the API
// said last, else the plain (non-JSON) end of the output.
func (p *claudeParser) noResultError(exitCode int, tail []byte) string {
	msg := fmt.Sprintf("claude exited with code %d without a result", exitCode)
	switch {
	case p.apiError != "" && p.lastText != "":
		return msg + ": " + lastLines(p.lastText, 3)
	case p.retry != "":
		return fmt.Sprintf("%s: API error %s (HTTP %d)", msg, p.retry, p.retryCode)
	}
	if t := plainTail(tail, 3); t != "" {
		return msg + ": " + t
	}
	return msg
}

func (p *claudeParser) resultError(rs *claudeEvent, fallback string) string {
	var parts []string
	if rs.Result != nil && strings.TrimSpace(*rs.Result) != "" {
		parts = append(parts, lastLines(*rs.Result, 3))
	}
	parts = append(parts, rs.Errors...)
	if len(parts) == 0 {
		return fallback
	}
	return strings.Join(parts, "\n")
}

// classify uses what the stream said about API failures before falling back
// to the error text.
func (p *claudeParser) classify(text string) Class {
	for _, st := range []int{p.apiStatus, p.retryCode} {
		if c := classifyStatus(st); c != ClassNone && c != ClassError {
			return c
		}
	}
	if p.limitRejected {
		return ClassRateLimit
	}
	for _, e := range []string{p.apiError, p.retry} {
		switch e {
		case "authentication_failed":
			return ClassAuth
		case "rate_limit":
			return ClassRateLimit
		case "overloaded", "server_error":
			return ClassServer
		}
	}
	return classifyText(text)
}

// claudeActivity reads Claude Code's stream-json: tool_use blocks of
// assistant messages, tool_result blocks flagged is_error, and text blocks.
type claudeActivity struct{ activityBase }

func (a *claudeActivity) Line(line []byte) []Activity {
	var ev struct {
		Type    string `json:"type"`
		Message *struct {
			Content []struct {
				Type    string         `json:"type"`
				Text    string         `json:"text"`
				ID      string         `json:"id"`
				Name    string         `json:"name"`
				Input   map[string]any `json:"input"`
				ToolUse string         `json:"tool_use_id"`
				IsError bool           `json:"is_error"`
				Content any            `json:"content"`
			} `json:"content"`
		} `json:"message"`
	}
	if (!jsonLine(line, "assistant") && !jsonLine(line, "user")) || !decodeLine(line, &ev) || ev.Message == nil {
		return nil
	}
	var out []Activity
	for _, c := range ev.Message.Content {
		switch {
		case ev.Type == "assistant" && c.Type == "tool_use":
			a.open(c.ID, c.Name)
			out = append(out, tool(c.Name, a.summary(c.Input)))
		case ev.Type == "assistant" && c.Type == "text":
			out = append(out, message(c.Text)...)
		case ev.Type == "user" && c.Type == "tool_result":
			name := a.closeTool(c.ToolUse)
			if c.IsError {
				out = append(out, toolError(name, resultText(c.Content)))
			}
		}
	}
	return out
}

func (a *claudeActivity) Flush() []Activity { return nil }

// resultText is a tool result's text: a string, or the text blocks of a list.
func resultText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if m, ok := b.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
