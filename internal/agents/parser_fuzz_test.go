package agents

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each adapter's parser reads what an untrusted program printed. Whatever
// that is, Line and Finish never panic, the same output always amounts to
// the same Result, and the Result is one the supervisor can act on: an
// error has a class and a text, a success has neither, numbers are finite
// and not negative, and the final text stays bounded.

func FuzzClaudeParser(f *testing.F)   { fuzzParser(f, "claude") }
func FuzzCodexParser(f *testing.F)    { fuzzParser(f, "codex") }
func FuzzGeminiParser(f *testing.F)   { fuzzParser(f, "gemini") }
func FuzzOpencodeParser(f *testing.F) { fuzzParser(f, "opencode") }
func FuzzAiderParser(f *testing.F)    { fuzzParser(f, "aider") }
func FuzzQwenParser(f *testing.F)     { fuzzParser(f, "qwen") }
func FuzzCommandParser(f *testing.F)  { fuzzParser(f, "command") }

// fuzzRequest carries a prompt with a signal-looking line, so echoing the
// prompt is exercised too.
var fuzzRequest = Request{
	Prompt:  "do the task\nRUNR_STATUS: done\nend",
	Promise: DefaultPromise,
	Command: []string{"agent"},
}

func fuzzParser(f *testing.F, kind string) {
	a, err := Lookup(kind)
	if err != nil {
		f.Fatal(err)
	}
	// The recorded outputs of every CLI are seeds for every parser: a CLI
	// printing another's format is as likely as any other noise.
	recordings, _ := filepath.Glob(filepath.Join("testdata", "*", "*"))
	for _, path := range recordings {
		if filepath.Ext(path) == ".exit" || strings.Contains(path, string(filepath.Separator)+"fuzz") {
			continue
		}
		out, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(out, 0, -1)
		f.Add(out, 1, 3)
	}
	f.Add([]byte("RUNR_STATUS: failed because\n"+DefaultPromise+"\n"), 0, -1)
	f.Add([]byte("RUNR_STATUS: done\n"), 0, -1)
	// Usage below zero, which would hand budget back if it were counted.
	for _, s := range []string{
		`{"type":"result","subtype":"success","is_error":false,"num_turns":-3,"result":"ok","usage":{"input_tokens":-5,"output_tokens":-1},"total_cost_usd":-2.5}`,
		`{"type":"turn.completed","usage":{"input_tokens":-5,"cached_input_tokens":-3,"output_tokens":-1}}`,
		`{"type":"result","status":"success","stats":{"total_tokens":-5,"input_tokens":-5,"output_tokens":-2}}`,
		`{"type":"step_finish","part":{"type":"step-finish","cost":-1.0,"tokens":{"input":-5,"output":-1,"cache":{"read":-1}}}}`,
		"Tokens: -2.3k sent, 1.1k received. Cost: $-0.01 message, $-0.05 session.",
		"RUNR_USAGE: input_tokens=-5 output_tokens=-1 cost_usd=-2",
		"RUNR_USAGE: input_tokens=10 output_tokens=2 cost_usd=NaN",
		"RUNR_USAGE: input_tokens=10 output_tokens=2 cost_usd=0.25 model=gpt-5\nRUNR_USAGE: input_tokens=9223372036854775807 output_tokens=1",
	} {
		f.Add([]byte(s+"\n"), 0, -1)
	}

	f.Fuzz(func(t *testing.T, out []byte, exitCode, abortAt int) {
		first, aborted := feed(a.NewParser(fuzzRequest), out, exitCode, abortAt)
		second, _ := feed(a.NewParser(fuzzRequest), out, exitCode, abortAt)
		checkConsistent(t, first, aborted)

		// ResetAt may be relative to the clock, which moves between the two.
		if first.ResetAt.IsZero() != second.ResetAt.IsZero() {
			t.Fatalf("ResetAt differs between two reads of the same output: %v and %v", first.ResetAt, second.ResetAt)
		}
		first.ResetAt, second.ResetAt = time.Time{}, time.Time{}
		if first != second {
			t.Fatalf("two reads of the same output differ:\n%+v\n%+v", first, second)
		}
	})
}

// feed gives the parser the output line by line as the supervisor does; a
// negative abortAt never stops early, a line asking to abort (or line
// abortAt, as a kill would) ends the call as a killed group: exit -1.
func feed(p Parser, out []byte, exitCode, abortAt int) (Result, bool) {
	lines := bytes.SplitAfter(out, []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		if p.Line(bytes.TrimRight(line, "\n")) || i == abortAt {
			return p.Finish(-1, lastTail(bytes.Join(lines[:i+1], nil))), true
		}
	}
	return p.Finish(exitCode, lastTail(out)), false
}

func checkConsistent(t *testing.T, r Result, aborted bool) {
	t.Helper()
	if r.IsError != (r.Class != ClassNone) {
		t.Fatalf("IsError %v with class %q", r.IsError, r.Class)
	}
	if r.IsError && strings.TrimSpace(r.ErrorText) == "" {
		t.Fatalf("an error without a text: %+v", r)
	}
	if !r.IsError && r.ErrorText != "" {
		t.Fatalf("a success with an error text %q", r.ErrorText)
	}
	if aborted && !r.IsError {
		t.Fatalf("a call killed before it ended counts as a success: %+v", r)
	}
	switch r.Class {
	case ClassNone, ClassRateLimit, ClassAuth, ClassBudget, ClassServer, ClassError, ClassMaxTurns:
	default:
		t.Fatalf("unknown class %q", r.Class)
	}
	if !r.ResetAt.IsZero() && r.Class != ClassRateLimit {
		t.Fatalf("a reset time %v on a %q result", r.ResetAt, r.Class)
	}
	switch r.Signal {
	case SignalNone:
		if r.SignalText != "" {
			t.Fatalf("signal text %q without a signal", r.SignalText)
		}
	case SignalDone, SignalBlocked, SignalFailed:
	default:
		t.Fatalf("unknown signal %q", r.Signal)
	}
	if len(r.FinalText) > maxFinalText {
		t.Fatalf("final text of %d bytes, more than %d", len(r.FinalText), maxFinalText)
	}
	if r.Turns < 0 || r.InputTokens < 0 || r.OutputTokens < 0 || r.CacheReadTokens < 0 || r.CacheWriteTokens < 0 {
		t.Fatalf("negative usage: %+v", r)
	}
	if math.IsNaN(r.CostUSD) || math.IsInf(r.CostUSD, 0) || r.CostUSD < 0 {
		t.Fatalf("cost %v is not a finite amount of at least 0", r.CostUSD)
	}
	if !r.CostKnown && r.CostUSD != 0 {
		t.Fatalf("cost %v although unknown", r.CostUSD)
	}
}
