package agents

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// opencodeAdapter runs `opencode run --format json`. The prompt follows "--"
// so that one starting with "-" is never read as a flag.
type opencodeAdapter struct{}

func (opencodeAdapter) Kind() string                 { return "opencode" }
func (opencodeAdapter) ReportsCost() bool            { return true }
func (opencodeAdapter) ReportsTokens() bool          { return true }
func (opencodeAdapter) Program(Request) string       { return "opencode" }
func (opencodeAdapter) VersionArgs() []string        { return []string{"--version"} }
func (opencodeAdapter) NewParser(req Request) Parser { return usageGuard{&opencodeParser{req: req}} }

// GenAIProvider: opencode talks to whichever provider its model is of.
func (opencodeAdapter) GenAIProvider() string { return "opencode" }

// opencode reports the cache reads apart from the input tokens.
func (opencodeAdapter) InputHoldsCacheReads() bool { return false }

func (opencodeAdapter) NewActivityReader(dir string) ActivityReader {
	return &opencodeActivity{newActivityBase(dir)}
}

// NestedSessionEnv: what opencode sets in its own process, which its tools
// inherit.
func (opencodeAdapter) NestedSessionEnv() []string { return []string{"OPENCODE", "OPENCODE_PID"} }

func (opencodeAdapter) StatePaths(u UserDirs) StatePaths {
	return StatePaths{Dirs: []string{filepath.Join(u.Config, "opencode"), filepath.Join(u.Data, "opencode"),
		filepath.Join(u.State, "opencode"), filepath.Join(u.Cache, "opencode")}}
}

func (opencodeAdapter) CredentialEnv() []string {
	return []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"}
}

func (opencodeAdapter) Invocation(req Request) (Invocation, error) {
	argv := []string{"opencode", "run", "--format", "json"}
	if req.Model != "" {
		argv = append(argv, "-m", req.Model)
	}
	if req.SessionID != "" {
		argv = append(argv, "--session", req.SessionID)
	}
	argv = append(argv, req.Args...)
	if len(req.Prompt) <= maxArgPrompt {
		return Invocation{Argv: append(argv, "--", req.Prompt)}, nil
	}
	// opencode run appends what it reads on stdin to the message.
	return Invocation{Argv: append(argv, "--", stdinPrompt), Stdin: req.Prompt, UseStdin: true}, nil
}

type opencodeEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *struct {
		SessionID string   `json:"sessionID"`
		Text      string   `json:"text"`
		Reason    string   `json:"reason"` // step_finish: stop, tool-calls, length, ...
		Cost      *float64 `json:"cost"`
		Tokens    *struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
			Cache  struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message         string            `json:"message"`
			StatusCode      int               `json:"statusCode"`
			ResponseHeaders map[string]string `json:"responseHeaders"`
		} `json:"data"`
	} `json:"error"`
}

// opencodeParser is no FinalReporter: opencode prints nothing that marks
// the end of a call (a step_finish is not the last step).
type opencodeParser struct {
	req      Request
	res      Result
	text     []string // text parts of the current step
	steps    int
	errText  string
	errName  string
	errCode  int
	errorSet bool
	resetAt  time.Time // from the failed response's rate limit headers
	// The last step finished with reason "stop": the model ended its turn
	// without a tool call, so opencode starts no further step.
	lastStep bool
}

// UsageSoFar is the sum of the steps finished so far: opencode prints each
// step's tokens and cost in its step_finish, as the call goes. A step that
// finished with reason "stop" is the call's last one: its figures are the
// call's totals.
func (p *opencodeParser) UsageSoFar() Usage {
	u := p.res.Usage()
	u.Final = p.lastStep
	return u
}

func (p *opencodeParser) Line(line []byte) bool {
	var ev opencodeEvent
	if !decodeLine(line, &ev) {
		return false
	}
	if ev.SessionID != "" {
		p.res.SessionID = ev.SessionID
	} else if ev.Part != nil && ev.Part.SessionID != "" {
		p.res.SessionID = ev.Part.SessionID
	}
	switch ev.Type {
	case "step_start":
		// The final message is the text of the last step.
		p.text = p.text[:0]
		p.lastStep = false
	case "text":
		if ev.Part != nil && ev.Part.Text != "" {
			p.text = append(p.text, ev.Part.Text)
		}
	case "step_finish":
		p.steps++
		p.lastStep = ev.Part != nil && ev.Part.Reason == "stop"
		if ev.Part == nil {
			break
		}
		if ev.Part.Cost != nil {
			p.res.CostUSD += *ev.Part.Cost
			p.res.CostKnown = true
		}
		if t := ev.Part.Tokens; t != nil {
			p.res.InputTokens += t.Input
			p.res.OutputTokens += t.Output
			p.res.CacheReadTokens += t.Cache.Read
			p.res.CacheWriteTokens += t.Cache.Write
		}
	case "error":
		p.errorSet = true
		p.errText = "opencode reported an error"
		if ev.Error != nil {
			p.errName, p.errCode = ev.Error.Name, ev.Error.Data.StatusCode
			p.resetAt = headerResetAt(ev.Error.Data.ResponseHeaders, time.Now())
			switch {
			case ev.Error.Data.Message != "" && ev.Error.Name != "":
				p.errText = ev.Error.Name + ": " + ev.Error.Data.Message
			case ev.Error.Data.Message != "":
				p.errText = ev.Error.Data.Message
			case ev.Error.Name != "":
				p.errText = ev.Error.Name
			}
		}
	}
	return false
}

func (p *opencodeParser) Finish(exitCode int, tail []byte) Result {
	res := p.res
	res.Turns = p.steps
	res.FinalText = lastBytes(strings.Join(p.text, "\n"), maxFinalText)
	res.Signal, res.SignalText = DetectSignal(res.FinalText, p.req.promise(), p.req.Prompt)
	switch {
	case p.errorSet:
		res.ErrorText = p.errText
	case exitCode != 0:
		res.ErrorText = fmt.Sprintf("opencode exited with code %d", exitCode)
	case p.steps == 0:
		res.ErrorText = "opencode ended without finishing a step"
	default:
		return res
	}
	if !p.errorSet {
		res.addTail(tail)
	}
	switch status := classifyStatus(p.errCode); {
	case p.errName == "ProviderAuthError":
		res.fail(ClassAuth)
	case status != ClassNone && status != ClassError:
		res.fail(status)
	default:
		res.fail(classifyText(res.ErrorText))
	}
	if res.Class == ClassRateLimit && !p.resetAt.IsZero() {
		res.ResetAt = p.resetAt
	}
	return res
}

// headerResetAt is when a rate limit resets by the headers of the
// provider's 429, which opencode passes on in its APIError
// (data.responseHeaders, names in lower case): the latest of Retry-After
// (seconds or an HTTP date), retry-after-ms, OpenAI's
// x-ratelimit-reset-requests and -tokens (durations: "1s", "6m0s",
// "1h30m") and Anthropic's anthropic-ratelimit-*-reset (RFC 3339). Zero
// when they name none.
func headerResetAt(h map[string]string, now time.Time) time.Time {
	var latest time.Time
	later := func(t time.Time) {
		if t.After(now) && t.After(latest) && t.Before(now.AddDate(1, 0, 0)) {
			latest = t
		}
	}
	for name, v := range h {
		v = strings.TrimSpace(v)
		switch name = strings.ToLower(name); {
		case name == "retry-after-ms":
			if ms, err := strconv.ParseFloat(v, 64); err == nil && ms < 1e12 {
				later(now.Add(time.Duration(ms * float64(time.Millisecond))))
			}
		case name == "retry-after":
			if s, err := strconv.ParseFloat(v, 64); err == nil && s < 1e9 {
				later(now.Add(time.Duration(s * float64(time.Second))))
			} else if t, err := http.ParseTime(v); err == nil {
				later(t)
			}
		case name == "x-ratelimit-reset-requests" || name == "x-ratelimit-reset-tokens":
			if d, err := time.ParseDuration(v); err == nil {
				later(now.Add(d))
			}
		case strings.HasPrefix(name, "anthropic-ratelimit-") && strings.HasSuffix(name, "-reset"):
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				later(t)
			}
		}
	}
	if latest.IsZero() {
		return latest
	}
	// Rounded up to the second: waiting until then is never too early.
	if t := latest.Truncate(time.Second); t.Before(latest) {
		latest = t.Add(time.Second)
	}
	return latest.UTC()
}

// opencodeActivity reads `opencode run --format json`: tool parts with
// their state, and text parts.
type opencodeActivity struct{ activityBase }

func (a *opencodeActivity) Line(line []byte) []Activity {
	if !jsonLine(line, "tool_use") && !jsonLine(line, "text") {
		return nil
	}
	var ev struct {
		Type string `json:"type"`
		Part struct {
			Type  string `json:"type"`
			Text  string `json:"text"`
			Tool  string `json:"tool"`
			State struct {
				Status string         `json:"status"`
				Input  map[string]any `json:"input"`
				Error  string         `json:"error"`
			} `json:"state"`
		} `json:"part"`
	}
	if !decodeLine(line, &ev) {
		return nil
	}
	switch ev.Type {
	case "tool_use":
		name := ev.Part.Tool
		if name != "" {
			name = strings.ToUpper(name[:1]) + name[1:]
		}
		if ev.Part.State.Status == "error" {
			return []Activity{tool(name, a.summary(ev.Part.State.Input)), toolError(name, ev.Part.State.Error)}
		}
		return []Activity{tool(name, a.summary(ev.Part.State.Input))}
	case "text":
		return message(ev.Part.Text)
	}
	return nil
}

func (a *opencodeActivity) Flush() []Activity { return nil }
