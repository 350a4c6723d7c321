package agents

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestResultPrinted says, for outputs recorded from the real CLIs, when the
// final result has been printed: never before its last event, and only for
// CLIs that print one.
func TestResultPrinted(t *testing.T) {
	tests := []struct {
		kind, name, ext string
		want            bool
	}{
		{"claude", "success_promise", ".out", true},
		{"claude", "rate_limit_429", ".out", true},
		{"claude", "auth_401", ".out", true},
		{"codex", "success", ".jsonl", true},
		{"codex", "usage_limit", ".jsonl", true}, // turn.failed
		{"gemini", "success", ".jsonl", true},
		{"qwen", "success", ".jsonl", true},
		{"opencode", "success", ".jsonl", false}, // no end marker
		{"aider", "success", ".txt", false},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.name, func(t *testing.T) {
			rec := load(t, tt.kind, tt.name, tt.ext)
			p := mustLookup(t, tt.kind).NewParser(Request{Prompt: "do it"})
			lines := bytes.Split(bytes.TrimRight(rec.out, "\n"), []byte("\n"))
			for i, l := range lines {
				if i == len(lines)-1 {
					// Up to the last line, the result is still to come.
					assert.False(t, ResultPrinted(p), "before the last line")
				}
				p.Line(l)
			}
			assert.Equal(t, tt.want, ResultPrinted(p))
		})
	}
	cmd := mustLookup(t, "command").NewParser(Request{Command: []string{"x"}})
	cmd.Line([]byte("RUNR_STATUS: done"))
	assert.False(t, ResultPrinted(cmd), "a command agent's status line does not end its call")
}
