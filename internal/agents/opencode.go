package agents

import (
	"fmt"
	"strings"
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
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

type opencodeParser struct {
	req      Request
	res      Result
	text     []string // text parts of the current step
	steps    int
	errText  string
	errName  string
	errCode  int
	errorSet bool
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
	case "text":
		if ev.Part != nil && ev.Part.Text != "" {
			p.text = append(p.text, ev.Part.Text)
		}
	case "step_finish":
		p.steps++
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
	return res
}
