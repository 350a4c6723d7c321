package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
)

// The live line shows what an agent or a custom condition said on one line,
// with no control character a terminal would act on.
func TestLiveLineTextIsVisible(t *testing.T) {
	var errOut bytes.Buffer
	l := newLiveLine(&IOStreams{Err: &errOut}, false)
	l.update(supervisor.Progress{Event: "tick", Tick: 1, Phase: "implement", Milestone: 1, Milestones: 1,
		Closest: &state.ConditionProg{Name: "custom\x1b[2J", Progress: 0.5}})
	l.update(supervisor.Progress{Event: "wait", WaitingTill: time.Now().Add(time.Minute), Message: "limit\x1b]0;pwned\x07\nnext"})
	l.done()
	out := errOut.String()
	assert.NotContains(t, out, "\x1b")
	assert.Contains(t, out, `closest: custom\x1b[2J 50%`)
	assert.Contains(t, out, `limit\x1b]0;pwned\x07\nnext`)
}

// The live line fits the terminal whatever the text: a wide character
// takes two columns, a tab one, and the cut leaves room for the ellipsis.
func TestFitCountsColumns(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 80, "short"},
		{"abcdefghij", 8, "abcdef…"},
		{"日本語のテキスト", 8, "日本語…"},
		{"a\tb", 80, "a b"},
		{"e\u0301e\u0301e\u0301e\u0301", 4, "e\u0301e\u0301…"},
		{"e\u0301e\u0301e\u0301", 4, "e\u0301e\u0301e\u0301"},
		{"anything", 0, "anything"},
	} {
		got := fit(tc.in, tc.width)
		assert.Equal(t, tc.want, got, "fit(%q, %d)", tc.in, tc.width)
		if tc.width > 0 {
			assert.LessOrEqual(t, displayWidth(got), tc.width-1)
		}
	}
}
