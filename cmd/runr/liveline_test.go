package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/resume"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
)

// The live line shows what an agent or a custom condition said on one line,
// with no control character a terminal would act on.
func TestLiveLineTextIsVisible(t *testing.T) {
	var errOut bytes.Buffer
	l := newLiveLine(&IOStreams{Err: &errOut}, false)
	l.update(supervisor.Progress{Msg: supervisor.ProgressTick{}, Tick: 1, Phase: "implement", Milestone: 1, Milestones: 1,
		Closest: &state.ConditionProg{Name: "custom\x1b[2J", Progress: 0.5}})
	l.update(supervisor.Progress{Msg: supervisor.ProgressWait{Until: time.Now().Add(time.Minute), Message: "limit\x1b]0;pwned\x07\nnext"}})
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

// A wait for a limit's reset shows which limit resets when and the time
// left; off a terminal it is said once when the wait starts, however often
// the progress repeats it; a stop that is not auto-resumed says why.
func TestLiveLineResetCountdown(t *testing.T) {
	var errOut bytes.Buffer
	l := newLiveLine(&IOStreams{Err: &errOut}, false)
	until := time.Now().Add(2*time.Minute + 14*time.Second + 500*time.Millisecond)
	p := supervisor.Progress{Msg: supervisor.ProgressWait{Until: until, ResetAt: until,
		Message: "auto-resume 1 of 3: rate limit (usage_window) resets at 01:21"}}
	l.update(p)
	l.update(p)
	l.declined(nil, resume.Decision{Why: "the agent hit a spend cap"})
	l.done()
	out := errOut.String()
	assert.Regexp(t, `^runr: auto-resume 1 of 3: rate limit \(usage_window\) resets at 01:21 \(in 2m1[45]s\); resuming then\n`, out)
	assert.Equal(t, 1, strings.Count(out, "resuming then"), "one line when the wait starts")
	assert.Contains(t, out, "runr: not auto-resuming: the agent hit a spend cap\n")
	assert.NotContains(t, out, "\x1b")

	// On a terminal the line is redrawn in place with the time left.
	var tty bytes.Buffer
	lt := &liveLine{io: &IOStreams{Err: &tty, ErrTTY: true}, stopc: make(chan struct{})}
	lt.update(p)
	assert.Contains(t, tty.String(), "\r\x1b[K")
	assert.Contains(t, tty.String(), "resets at 01:21 (in 2m1")
}

// A parallel run on a terminal: the run's line and one line per worker at
// work, each with its latest activity; a finished tick leaves a lasting
// line; a worker whose milestone run stopped leaves the view; off a
// terminal every line names its worker.
func TestLiveLineWorkers(t *testing.T) {
	var tty bytes.Buffer
	l := &liveLine{io: &IOStreams{Err: &tty, ErrTTY: true}, stopc: make(chan struct{})}
	tick := func(k, m int, phase string) supervisor.Progress {
		return supervisor.Progress{RunID: "r1", Worker: k, Msg: supervisor.ProgressTick{}, Tick: 1, Phase: phase, Milestone: m, Milestones: 3}
	}
	l.update(tick(1, 1, "implement"))
	l.update(tick(2, 2, "implement"))
	l.update(supervisor.Progress{Worker: 2, Msg: supervisor.ProgressActivity{Activity: agents.Activity{Kind: agents.ActivityTool, Tool: "Edit", Text: "b.go"}}})
	tty.Reset()
	l.mu.Lock()
	l.draw()
	l.mu.Unlock()
	frame := tty.String()
	assert.Contains(t, frame, "run r1 · 2 workers at work")
	assert.Contains(t, frame, "worker 1 · tick 1 · implement · milestone 1/3")
	assert.Regexp(t, `worker 2 · tick 1 · implement · milestone 2/3 .*b\.go`, frame)
	assert.Contains(t, frame, "\x1b[2A", "the cursor goes back to the run's line")
	assert.Equal(t, 3, l.drawn)

	tty.Reset()
	done := tick(1, 1, "implement")
	done.Msg = supervisor.ProgressTickDone{Outcome: "agent done"}
	l.update(done)
	assert.Contains(t, tty.String(), "worker 1 · tick 1 · milestone 1/3 · implement · agent done")
	l.update(supervisor.Progress{RunID: "r1", Worker: 1, Msg: supervisor.ProgressStop{}})
	tty.Reset()
	l.mu.Lock()
	l.draw()
	l.mu.Unlock()
	assert.Contains(t, tty.String(), "1 worker at work")
	assert.NotContains(t, tty.String(), "worker 1 ·")
	l.done()
	assert.Equal(t, 0, l.drawn)

	var plain bytes.Buffer
	p := newLiveLine(&IOStreams{Err: &plain}, false)
	p.update(tick(1, 1, "implement"))
	p.update(tick(2, 2, "implement"))
	p.update(supervisor.Progress{Worker: 2, Msg: supervisor.ProgressActivity{Activity: agents.Activity{Kind: agents.ActivityTool, Tool: "Edit", Text: "b.go"}}})
	p.done()
	assert.Contains(t, plain.String(), "runr: worker 1 · tick 1 · implement · milestone 1/3")
	assert.Contains(t, plain.String(), "runr: worker 2 · tick 1 · implement · milestone 2/3")
	assert.Contains(t, plain.String(), "runr:   worker 2: ")
	assert.NotContains(t, plain.String(), "\x1b")
}
