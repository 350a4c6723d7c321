package supervisor

import (
	"bytes"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
)

// outputPoll is how often the latest output line of an agent whose output
// is not a stream of events is shown.
const outputPoll = 100 * time.Millisecond

// maxOutputLine bounds the copy of the latest output line.
const maxOutputLine = 1024

// FileCounts are the files a tick's agent call added, modified and deleted.
type FileCounts struct {
	Added, Modified, Deleted int
}

// tickSummary is what a tick came to, for the line after it.
type tickSummary struct {
	files      *FileCounts
	verify     string // "passed" or "failed", when the tick ran the checks
	verifyTime time.Duration
	call       callSummary // the tick's agent call: its usage and cost
}

// callSummary is what an agent call used, as account counted it; source
// is "" when the tick made no call.
type callSummary struct {
	agents.Usage
	source agents.CostSource
}

func countsOf(d guard.Delta) *FileCounts {
	return &FileCounts{Added: len(d.Added), Modified: len(d.Modified), Deleted: len(d.Deleted)}
}

// watchActivity returns the line callback that shows what the agent does,
// to chain before the parser's, and a stop function to call once the call
// ended. An event stream's tool calls, failures and messages (of a kind
// whose adapter reads its stream) go to the timeline and the progress as
// they come; a plain output's latest line is shown only when
// Options.LiveOutput asks for it (a person watches), at most every
// outputPoll, and never recorded.
func (s *Supervisor) watchActivity(kind, dir string) (func([]byte), func()) {
	tick, phase := s.st.Tick, s.st.Phase
	emit := func(a agents.Activity) { s.activity(a, tick, phase) }
	if r := agents.EventReader(kind, dir); r != nil {
		return func(line []byte) {
				for _, a := range r.Line(line) {
					emit(a)
				}
			}, func() {
				for _, a := range r.Flush() {
					emit(a)
				}
			}
	}
	if !s.o.LiveOutput {
		return nil, func() {}
	}
	w := &outputWatch{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(outputPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if text, ok := w.take(); ok {
					for _, a := range agents.NewActivityReader(kind, dir).Line([]byte(text)) {
						emit(a)
					}
				}
			}
		}
	}()
	return w.line, func() { close(done); wg.Wait() }
}

// activity records and shows one thing the agent did. An output line is
// shown only: it stays in the tick's log.
func (s *Supervisor) activity(a agents.Activity, tick int, phase string) {
	if a.Kind != agents.ActivityOutput && s.tl != nil {
		// Appended as it happens, not held for the next state.json: an
		// activity is a record of the call, which state.json does not
		// describe, and `runr logs --follow` shows it live.
		s.tl.Append(tick, phase, state.ActivityEvent{Kind: string(a.Kind), Text: a.Text, Tool: a.Tool})
	}
	s.o.Progress(Progress{Msg: ProgressActivity{a}})
}

// outputWatch keeps a copy of the latest non-blank output line.
type outputWatch struct {
	mu    sync.Mutex
	buf   []byte
	seq   int
	shown int
}

func (w *outputWatch) line(l []byte) {
	if len(bytes.TrimSpace(l)) == 0 {
		return
	}
	w.mu.Lock()
	w.buf = append(w.buf[:0], l[:min(len(l), maxOutputLine)]...)
	w.seq++
	w.mu.Unlock()
}

// take returns the latest line when it was not taken yet.
func (w *outputWatch) take() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seq == w.shown {
		return "", false
	}
	w.shown = w.seq
	return string(w.buf), true
}
