package agents

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// aiderAdapter runs aider for one message. aider prints plain text and exits
// 0 even when the LLM call failed, so its parser reads the error lines.
type aiderAdapter struct{}

func (aiderAdapter) Kind() string { return "aider" }

// aider prints a cost only for models whose price it knows, so a cost budget
// cannot rely on it.
func (aiderAdapter) ReportsCost() bool            { return false }
func (aiderAdapter) ReportsTokens() bool          { return true }
func (aiderAdapter) Program(Request) string       { return "aider" }
func (aiderAdapter) VersionArgs() []string        { return []string{"--version"} }
func (aiderAdapter) NewParser(req Request) Parser { return usageGuard{newAiderParser(req)} }

// GenAIProvider: aider talks to whichever provider its model is of.
func (aiderAdapter) GenAIProvider() string { return "aider" }

// aider's tokens sent count as input in full; the cached ones it names are
// priced apart.
func (aiderAdapter) InputHoldsCacheReads() bool { return false }

// NewActivityReader: aider prints plain text.
func (aiderAdapter) NewActivityReader(string) ActivityReader { return nil }

// NestedSessionEnv: aider sets none for the commands it runs.
func (aiderAdapter) NestedSessionEnv() []string { return nil }

// StatePaths: aider writes its history and cache files in the work tree;
// its analytics and version checks under ~/.aider.
func (aiderAdapter) StatePaths(u UserDirs) StatePaths {
	return StatePaths{Dirs: []string{filepath.Join(u.Home, ".aider")}}
}

func (aiderAdapter) CredentialEnv() []string {
	return []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY"}
}

// Invocation passes the prompt file with --message-file when there is one
// (no argument length limit, no quoting), else the text as --message=TEXT,
// whose "=" form keeps a prompt starting with "-" from reading as a flag.
func (aiderAdapter) Invocation(req Request) (Invocation, error) {
	argv := []string{"aider"}
	if req.PromptFile != "" {
		argv = append(argv, "--message-file", req.PromptFile)
	} else {
		if len(req.Prompt) > maxArgPrompt {
			return Invocation{}, fmt.Errorf("aider: the prompt is %d bytes, too long for --message; runr must pass it as a prompt file", len(req.Prompt))
		}
		argv = append(argv, "--message="+req.Prompt)
	}
	argv = append(argv, "--yes-always", "--no-auto-commits", "--no-pretty", "--no-stream")
	if req.Model != "" {
		argv = append(argv, "--model", req.Model)
	}
	return Invocation{Argv: append(argv, req.Args...)}, nil
}

var (
	// "Tokens: 2.3k sent, 1.1k received. Cost: $0.01 message, $0.05 session."
	// "Tokens: 12,345 sent, 1,024 cached, 456 received."
	aiderTokens = lazyRegexp(`^Tokens:\s*([\d.,]+[kKmM]?)\s+sent,\s*(?:([\d.,]+[kKmM]?)\s+(?:cache write|cached|cache hit)[^,]*,\s*)*([\d.,]+[kKmM]?)\s+received`)
	aiderCost   = lazyRegexp(`Cost:\s*\$([\d.,]+)\s+message,\s*\$([\d.,]+)\s+session`)
	// Lines aider prints when the LLM call or its setup failed; narrow
	// enough that the model's own answer rarely matches.
	aiderErrLine = lazyRegexp(`(?i)^(API )?Error:|litellm\.\w*Error|\b(Authentication|RateLimit|ServiceUnavailable|InternalServer|APIConnection|BadRequest|NotFound|ContextWindowExceeded)Error\b|^The API provider |rate limit.*(exceeded|reached)|Missing these environment variables`)
)

// aiderParser is no FinalReporter: aider's plain text has nothing that
// marks its end.
type aiderParser struct {
	req  Request
	res  Result
	out  tailBuffer
	errs []string // error lines since the last successful LLM call
}

// UsageSoFar is the sum of the `Tokens:` lines so far, and the session cost
// of the last one: aider prints one after each LLM call, as the call goes.
// The model is the one aider announced when it started. Nothing marks
// aider's last line, so the figures are never final before it exits.
func (p *aiderParser) UsageSoFar() Usage { return p.res.Usage() }

// aiderModelLine is aider's announcement of its model when it starts:
// "Main model: anthropic/claude-sonnet-4-5 with diff edit format, ..."
// ("Model: ..." when there is no separate weak model).
func aiderModelLine(b []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("Main model:"))
	if !ok {
		if rest, ok = bytes.CutPrefix(b, []byte("Model:")); !ok {
			return "", false
		}
	}
	f := strings.Fields(string(rest))
	if len(f) < 2 || f[1] != "with" || len(f[0]) > maxModelName || !plainWord(f[0]) {
		return "", false
	}
	return f[0], true
}

func newAiderParser(req Request) *aiderParser {
	return &aiderParser{req: req, out: tailBuffer{max: maxFinalText}}
}

// Line runs the regular expressions only on lines that can match them: most
// of what aider prints is the model's text, which a byte comparison or two
// rules out without a copy.
func (p *aiderParser) Line(line []byte) bool {
	b := bytes.TrimSpace(line)
	// aiderTokens is anchored at "Tokens:": no other line can match it.
	if m := aiderUsage(b); m != nil {
		p.res.Turns++
		p.res.InputTokens += parseCount(m[1])
		p.res.CacheReadTokens += parseCount(m[2])
		p.res.OutputTokens += parseCount(m[3])
		if c := aiderCost().FindSubmatch(b); c != nil {
			// The session figure is the total of this aider process, which
			// is this one call.
			if v, err := strconv.ParseFloat(strings.ReplaceAll(string(c[2]), ",", ""), 64); err == nil {
				p.res.CostUSD, p.res.CostKnown = v, true
			}
		}
		// A usage line means an LLM call went through: the errors before it
		// were retries that recovered.
		p.errs = p.errs[:0]
		return false
	}
	if p.res.Model == "" && p.res.Turns == 0 {
		// Only the announcement before the first LLM call names the model;
		// a line of the model's answer that looks like it does not.
		if m, ok := aiderModelLine(b); ok {
			p.res.Model = m
		}
	}
	if mayBeAiderError(b) && aiderErrLine().Match(b) {
		p.errs = append(p.errs, string(b))
		if len(p.errs) > 5 {
			p.errs = p.errs[1:]
		}
	}
	p.out.writeLine(line)
	return false
}

// aiderUsage matches aiderTokens against a trimmed line.
func aiderUsage(b []byte) []string {
	if !bytes.HasPrefix(b, []byte("Tokens:")) {
		return nil
	}
	return aiderTokens().FindStringSubmatch(string(b))
}

// aiderErrorWords are, in lower case, words of which every match of
// aiderErrLine holds one. None has a letter that case folding maps outside
// ASCII (only k and s have such folds), so an ASCII case-insensitive search
// for them never misses a line the case-insensitive expression matches.
var aiderErrorWords = []string{"error", "rate limit", "api provider", "environment variable"}

// mayBeAiderError says whether aiderErrLine could match b; false means it
// cannot.
func mayBeAiderError(b []byte) bool {
	for _, w := range aiderErrorWords {
		if containsFoldASCII(b, w) {
			return true
		}
	}
	return false
}

// containsFoldASCII reports whether b holds lower, a lower-case ASCII word,
// in any mix of ASCII case.
func containsFoldASCII(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		j := 0
		for j < len(lower) && b[i+j]|0x20 == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// parseCount reads aider's token counts: "2.3k", "1.1M", "12,345".
func parseCount(s string) int64 {
	if s == "" {
		return 0
	}
	mult := 1.0
	switch s[len(s)-1] {
	case 'k', 'K':
		mult, s = 1e3, s[:len(s)-1]
	case 'm', 'M':
		mult, s = 1e6, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		return 0
	}
	return int64(v*mult + 0.5)
}

func (p *aiderParser) Finish(exitCode int, tail []byte) Result {
	res := p.res
	res.FinalText = p.out.String()
	res.Signal, res.SignalText = DetectSignal(res.FinalText, p.req.promise(), p.req.Prompt)
	switch {
	case len(p.errs) > 0:
		res.ErrorText = strings.Join(p.errs, "\n")
	case exitCode != 0:
		res.ErrorText = fmt.Sprintf("aider exited with code %d", exitCode)
		if t := lastLines(string(tail), 3); t != "" {
			res.ErrorText += ": " + t
		}
	default:
		return res
	}
	res.fail(classifyText(res.ErrorText))
	return res
}
