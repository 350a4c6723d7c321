package watch

import (
	"bytes"
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/runr-dev/runr/internal/report"
	"github.com/runr-dev/runr/internal/state"
)

// follower streams a run's transcript as `runr logs --follow` does: the
// timeline read from where the last poll stopped, written by report's
// Transcript. It is polled by one command at a time.
type follower struct {
	mu     sync.Mutex
	closed bool
	store  *state.Store
	id     string
	tl     *state.TimelineFollower
	tr     *report.Transcript
	out    lineWriter
}

func newFollower(store *state.Store, id string) *follower {
	return &follower{store: store, id: id}
}

// poll returns the command that reads what the timeline gained.
func (f *followView) poll() tea.Cmd {
	src, gen := f.src, f.gen
	return func() tea.Msg {
		lines, ended, err := src.read()
		return FollowMsg{Gen: gen, Lines: lines, Ended: ended, Err: err}
	}
}

// read hands over the transcript's new complete lines, and whether the run
// is no longer live (its stop, if it has one, is among the lines by then).
func (f *follower) read() ([]string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, true, nil
	}
	if f.tr == nil {
		st, err := f.store.Load(f.id)
		if err != nil {
			return nil, true, err
		}
		f.tr = report.NewTranscript(&f.out, st, f.store.RunDir(f.id), 0)
		f.tl = state.FollowTimeline(f.store.TimelinePath(f.id), maxEvent)
	}
	// The lock before the events: a run that stops between the two has
	// written its stop by then.
	live, _, _ := f.store.Locked(f.id)
	err := f.tl.Poll(func(ev state.Event) error {
		f.tr.Event(ev)
		return f.tr.Err()
	})
	lines := f.out.take()
	if !live || err != nil {
		f.closeLocked()
	}
	return lines, !live, err
}

// close ends the follower; a poll under way finishes first.
func (f *follower) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeLocked()
}

func (f *follower) closeLocked() {
	if f.tl != nil && !f.closed {
		f.tl.Close()
	}
	f.closed = true
}

// lineWriter collects written text as complete lines.
type lineWriter struct {
	partial []byte
	lines   []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			break
		}
		w.lines = append(w.lines, string(append(w.partial, p[:i]...)))
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) take() []string {
	l := w.lines
	w.lines = nil
	return l
}
