package agents

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Placeholders a command agent's argv may hold.
const (
	placeholderPrompt     = "{prompt}"
	placeholderPromptFile = "{prompt_file}"
)

// commandAdapter runs any program. It knows nothing of the program's output
// but the completion signal and the RUNR_USAGE lines, which it looks for in
// every stdout line.
type commandAdapter struct{}

// CommandKind is the kind of an agent that is any program, given by its
// argv (agent.command, or the argv after `runr run --`).
const CommandKind = "command"

func (commandAdapter) Kind() string { return CommandKind }

// A command agent reports cost or tokens only if the program prints
// RUNR_USAGE lines, which runr cannot know beforehand (MayReportUsage).
func (commandAdapter) ReportsCost() bool       { return false }
func (commandAdapter) ReportsTokens() bool     { return false }
func (commandAdapter) MayReportUsage() bool    { return true }
func (commandAdapter) VersionArgs() []string   { return nil }
func (commandAdapter) CredentialEnv() []string { return nil }

// A command agent's program is unknown: its activity is its latest output
// line, it has no state runr knows of (what it writes outside the work tree
// goes in sandbox.writable), no session variables, and no provider but
// itself.
func (commandAdapter) NewActivityReader(string) ActivityReader { return nil }
func (commandAdapter) StatePaths(UserDirs) StatePaths          { return StatePaths{} }
func (commandAdapter) NestedSessionEnv() []string              { return nil }
func (commandAdapter) GenAIProvider() string                   { return CommandKind }

// RUNR_USAGE's input_tokens are the program's, counted apart from
// cache_read_tokens.
func (commandAdapter) InputHoldsCacheReads() bool { return false }

func (commandAdapter) Program(req Request) string {
	if len(req.Command) == 0 {
		return ""
	}
	return req.Command[0]
}

// Invocation substitutes {prompt} and {prompt_file} inside any argument;
// when the argv uses neither, the prompt goes on stdin.
func (commandAdapter) Invocation(req Request) (Invocation, error) {
	if len(req.Command) == 0 {
		return Invocation{}, stopreasons.Errorf(stopreasons.ConfigInvalid,
			"agent.command is empty: set agent.command in runr.yaml or give the argv after -- (runr run -- my-agent {prompt})")
	}
	argv := make([]string, len(req.Command))
	used := false
	for i, a := range req.Command {
		if strings.Contains(a, placeholderPromptFile) {
			if req.PromptFile == "" {
				return Invocation{}, fmt.Errorf("agent.command argument %q needs the prompt file, but none was written for this call", a)
			}
			a = strings.ReplaceAll(a, placeholderPromptFile, req.PromptFile)
			used = true
		}
		if strings.Contains(a, placeholderPrompt) {
			if err := CheckArgvPrompt(req.Command, req.Prompt); err != nil {
				return Invocation{}, err
			}
			a = strings.ReplaceAll(a, placeholderPrompt, req.Prompt)
			used = true
		}
		argv[i] = a
	}
	if used {
		return Invocation{Argv: argv}, nil
	}
	return Invocation{Argv: argv, Stdin: req.Prompt, UseStdin: true}, nil
}

// CheckArgvPrompt refuses a prompt that a command agent's argv would carry
// in {prompt} but that is longer than one argument may be (the kernel
// refuses the exec with E2BIG): such a prompt goes through {prompt_file}.
func CheckArgvPrompt(command []string, prompt string) error {
	for _, a := range command {
		if strings.Contains(a, placeholderPrompt) && len(prompt) > maxArgPrompt {
			return stopreasons.Errorf(stopreasons.UsageError,
				"the prompt is %d bytes, too long for one argument of agent.command (at most %d KiB): write {prompt_file} instead of {prompt} in the agent's argv, or drop both to get the prompt on stdin",
				len(prompt), maxArgPrompt>>10)
		}
	}
	return nil
}

func (commandAdapter) NewParser(req Request) Parser {
	return usageGuard{&commandParser{
		signals: newSignalDetector(req.promise(), req.Prompt),
		out:     tailBuffer{max: maxFinalText},
	}}
}

// commandParser scans each stdout line for the signal as it streams, so a
// signal early in a long output is found with memory bounded by the tail.
// It is no FinalReporter: a RUNR_STATUS line may come before the program's
// last work.
type commandParser struct {
	signals *signalDetector
	out     tailBuffer
	chunked bool   // the tail comes from Chunk
	usage   Usage  // from the well-formed RUNR_USAGE lines
	stamp   uint64 // counts the RUNR_USAGE lines taken (UsageStamp)
}

// UsageSoFar is the last well-formed RUNR_USAGE line's figures, none lower
// than an earlier line's: each line holds the call's totals so far, and a
// total does not go down (a line that lowers one, or gives no cost_usd
// after one that did, keeps the figure so far).
func (p *commandParser) UsageSoFar() Usage { return p.usage }

// UsageStamp changes with each well-formed RUNR_USAGE line: the usage
// cannot have changed on any other.
func (p *commandParser) UsageStamp() uint64 { return p.stamp }

func (p *commandParser) Line(line []byte) bool {
	p.signals.line(line)
	if u, ok := ParseUsageLine(line); ok {
		p.usage = p.usage.atLeast(u)
		p.stamp++
	}
	if !p.chunked {
		p.out.writeLine(line)
	}
	return false
}

// LineStarts marks the first bytes of the lines Line needs once stdout
// comes in chunks (Chunk keeps the final text): those that can signal or
// report usage. On any other line Line has nothing to do.
func (p *commandParser) LineStarts() *[256]bool {
	t := p.signals.starts
	markStarts(&t, UsagePrefix)
	return &t
}

// Chunk keeps the end of stdout as it came, the final text, in place of
// the lines: a caller that hands chunks over spares a copy of every line.
func (p *commandParser) Chunk(b []byte) {
	p.chunked = true
	p.out.write(b)
}

func (p *commandParser) Finish(exitCode int, tail []byte) Result {
	u := p.usage
	res := Result{
		FinalText:        p.out.String(),
		Signal:           p.signals.signal,
		SignalText:       p.signals.text,
		InputTokens:      u.InputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens,
		CostUSD:          u.CostUSD,
		CostKnown:        u.CostKnown,
		Model:            u.Model,
	}
	switch {
	case exitCode != 0:
		res.ErrorText = fmt.Sprintf("the agent command exited with code %d", exitCode)
		if t := lastLines(string(tail), 3); t != "" {
			res.ErrorText += ": " + t
		}
	case res.Signal == SignalFailed:
		res.ErrorText = "the agent said RUNR_STATUS: failed"
		if res.SignalText != "" {
			res.ErrorText += ": " + res.SignalText
		}
	default:
		return res
	}
	res.IsError, res.Class = true, ClassError
	return res
}

// UsagePrefix starts a line by which a command agent reports its usage
// (DESIGN §6).
const UsagePrefix = "RUNR_USAGE:"

// maxModelName bounds the model a RUNR_USAGE line may name.
const maxModelName = 128

// ParseUsageLine reads a line `RUNR_USAGE: input_tokens=N output_tokens=N
// [cache_read_tokens=N] [cache_write_tokens=N] [cost_usd=X] [model=NAME]`:
// the call's totals so far. Leading and trailing blanks are allowed, and so
// are fields in any order and fields runr does not know (ignored). A line
// without both token counts, with a count or cost that is not a
// non-negative number, a field given twice, or a model name that is not one
// plain word is not a usage line: ok is false and it changes nothing.
func ParseUsageLine(line []byte) (u Usage, ok bool) {
	// Most lines are not usage lines: the first byte past the leading
	// ASCII blanks tells, without trimming the line (a byte of a longer
	// UTF-8 rune may begin a blank bytes.TrimSpace knows).
	i := 0
	for i < len(line) && line[i] < utf8.RuneSelf && asciiSpace[line[i]] {
		i++
	}
	if i == len(line) || line[i] != UsagePrefix[0] && line[i] < utf8.RuneSelf {
		return Usage{}, false
	}
	line = bytes.TrimSpace(line)
	rest, found := bytes.CutPrefix(line, []byte(UsagePrefix))
	if !found {
		return Usage{}, false
	}
	seen := map[string]bool{}
	for _, f := range strings.Fields(string(rest)) {
		k, v, isKV := strings.Cut(f, "=")
		if !isKV || v == "" {
			return Usage{}, false
		}
		if seen[k] {
			return Usage{}, false
		}
		seen[k] = true
		var n *int64
		switch k {
		case "input_tokens":
			n = &u.InputTokens
		case "output_tokens":
			n = &u.OutputTokens
		case "cache_read_tokens":
			n = &u.CacheReadTokens
		case "cache_write_tokens":
			n = &u.CacheWriteTokens
		case "cost_usd":
			c, err := strconv.ParseFloat(v, 64)
			if err != nil || !(c >= 0) || math.IsInf(c, 0) {
				return Usage{}, false
			}
			u.CostUSD, u.CostKnown = c, true
		case "model":
			if len(v) > maxModelName || !plainWord(v) {
				return Usage{}, false
			}
			u.Model = v
		}
		if n != nil {
			c, err := strconv.ParseInt(v, 10, 64)
			if err != nil || c < 0 {
				return Usage{}, false
			}
			*n = c
		}
	}
	if !seen["input_tokens"] || !seen["output_tokens"] {
		return Usage{}, false
	}
	return u, true
}

// plainWord reports whether s holds only characters a model name is made
// of: letters, digits and . _ - : / @ [ ].
func plainWord(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("._-:/@[]", r):
		default:
			return false
		}
	}
	return true
}
