package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// verifyTailLines is how much of a failed check's output a transcript shows.
const verifyTailLines = 8

// outputTailLines is how much of a plain-text agent's output a transcript
// shows of each call.
const outputTailLines = 20

// Transcript writes a run's timeline as a readable account, tick by tick:
// the milestone, what the agent did, the checks and their failing output,
// each tick's outcome, and the stop. Events go in one at a time (Event), so
// the same writer serves a finished run and one followed live. Text that came
// from an agent, a log or the task is written with its control characters
// made visible.
type Transcript struct {
	// Raw says where the whole log of a tick's agent call is read, when
	// the transcript shows only its end: by default the command that
	// prints it. A parallel run's worker has no run id of its own to give
	// runr logs, so its caller says.
	Raw func(tick int) string

	w      io.Writer
	runDir string
	goals  []string
	only   int // the one tick to show, 0 for all

	tick      int  // the tick whose events come now
	milestone int  // the milestone the current tick works on (1-based)
	header    bool // the current tick's header is written
	err       error
}

// NewTranscript returns a transcript of the run st (its goals name the
// milestones) whose files are in runDir. tick > 0 shows that tick only.
func NewTranscript(w io.Writer, st *state.State, runDir string, tick int) *Transcript {
	t := &Transcript{w: w, runDir: runDir, only: tick, milestone: 1, tick: -1}
	t.Raw = func(tick int) string { return fmt.Sprintf("runr logs %s --tick %d --raw", st.RunID, tick) }
	for _, m := range st.Milestones {
		t.goals = append(t.goals, m.Goal)
	}
	return t
}

// Err is the first write error.
func (t *Transcript) Err() error { return t.err }

func (t *Transcript) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// Event writes what ev adds to the transcript.
func (t *Transcript) Event(ev state.Event) {
	if ev.Tick != t.tick {
		t.tick, t.header = ev.Tick, false
	}
	if t.only > 0 && ev.Tick != t.only {
		t.track(ev)
		return
	}
	switch d := ev.Data.(type) {
	case state.RunStartedEvent:
		t.milestone = max(d.Milestone, 1)
		src := "--prompt"
		if d.TaskFile != "" {
			src = d.TaskFile
		}
		t.printf("run started · task %s · %s\n", line(src), stopreasons.Plural(d.Milestones, "milestone"))
	case state.RunResumedEvent:
		t.milestone = max(d.Milestone, 1)
		t.printf("run resumed at milestone %d, %s\n", t.milestone, line(d.Phase))
	case state.StopEvent:
		t.printf("stop: %s (exit %d): %s\n", line(d.Code), d.ExitCode, line(d.Message))

	// A parallel run's own events: its workers' ticks are in their runs
	// (docs/parallel.md).
	case state.WorkerStartedEvent:
		if d.Requeue > 0 {
			t.printf("%s started on %s (returned %d×)\n", who(d.Worker, d.Milestone), line(d.Branch), d.Requeue)
		} else {
			t.printf("%s started on %s\n", who(d.Worker, d.Milestone), line(d.Branch))
		}
	case state.WorkerDoneEvent:
		if d.Error != "" {
			t.printf("%s: its run failed: %s\n", who(d.Worker, d.Milestone), line(d.Error))
		} else {
			t.printf("%s: its run stopped: %s\n", who(d.Worker, d.Milestone), line(d.Code))
		}
	case state.MergeEvent:
		switch d.Outcome {
		case state.MergeMerged:
			t.printf("%s merged, commit %s\n", who(d.Worker, d.Milestone), line(short(d.Commit)))
		case state.MergeConflict:
			t.printf("%s did not merge: conflict in %s; undone\n", who(d.Worker, d.Milestone), line(strings.Join(d.Files, ", ")))
		default:
			t.printf("%s did not merge: %s failed on the merged tree; undone\n", who(d.Worker, d.Milestone), line(d.Command))
		}
	case state.RequeueEvent:
		t.printf("%s returned to a worker (%d)\n", who(d.Worker, d.Milestone), d.Requeue)

	// The events of a tick, under its header.
	case state.ActivityEvent:
		t.writeHeader(ev)
		t.activity(d)
	case state.ProcessEndedEvent:
		t.writeHeader(ev)
		t.processEnded(ev, d)
	case state.GuardEvent:
		t.writeHeader(ev)
		// An older runr's event may list every file: shown bounded too.
		files, more := stopreasons.FirstFiles(d.Files)
		t.printf("  guard %s: %s\n", line(d.Rule), line(stopreasons.ShowFiles(files, more+d.FilesOmitted)))
	case state.AttemptEvent:
		t.writeHeader(ev)
		if d.Signature != "" {
			t.printf("  attempt %s (error %s)\n", line(d.Outcome), line(d.Signature))
		} else {
			t.printf("  attempt %s\n", line(d.Outcome))
		}
	case state.UntestedEvent:
		t.writeHeader(ev)
		t.untested(d)
	case state.MilestoneApprovedEvent:
		t.writeHeader(ev)
		t.printf("  milestone %d approved\n", d.Milestone)
	case state.MilestoneFailedEvent:
		t.writeHeader(ev)
		t.printf("  milestone %d failed after %s\n", d.Milestone, stopreasons.Plural(d.Retries, "retry"))
	case state.CheckpointCommitEvent:
		t.writeHeader(ev)
		t.printf("  commit %s\n", line(short(d.SHA)))
	case state.LeftoversStoppedEvent:
		t.writeHeader(ev)
		t.printf("  stopped %d process(es) the agent left behind\n", len(d.PIDs))
	case state.WorktreeCreatedEvent:
		t.writeHeader(ev)
		t.printf("  worktree %s on branch %s\n", line(d.Path), line(d.Branch))
	case state.TickEvent:
		t.writeHeader(ev)
		t.tickEnd(d)
		t.track(ev)
	default:
		// Any other event, of a type this runr does not know too, opens
		// its tick.
		t.writeHeader(ev)
	}
}

// track follows the milestone the next tick works on.
func (t *Transcript) track(ev state.Event) {
	m := 0
	switch d := ev.Data.(type) {
	case state.TickEvent:
		m = d.Milestone
	case state.RunStartedEvent:
		m = d.Milestone
	case state.RunResumedEvent:
		m = d.Milestone
	}
	if m > 0 {
		t.milestone = m
	}
}

func (t *Transcript) writeHeader(ev state.Event) {
	if t.header {
		return
	}
	t.header = true
	goal := ""
	if i := t.milestone - 1; i >= 0 && i < len(t.goals) {
		goal = " " + strconv.Quote(line(t.goals[i]))
	}
	t.printf("\ntick %d · milestone %d/%d%s · %s\n", ev.Tick, t.milestone, len(t.goals), goal, line(ev.Phase))
}

// activity is one thing the agent did: a tool call, a failed one, or a
// short message.
func (t *Transcript) activity(d state.ActivityEvent) {
	text := line(d.Text)
	switch d.Kind {
	case "tool":
		t.printf("  > %s %s\n", line(d.Tool), text)
	case "tool_error":
		t.printf("  ! %s failed: %s\n", line(d.Tool), text)
	default:
		t.printf("  \" %s\n", text)
	}
}

func (t *Transcript) processEnded(ev state.Event, d state.ProcessEndedEvent) {
	what := "agent"
	if ev.Phase != state.PhaseImplement {
		what = ev.Phase
	}
	var notes []string
	if d.TimedOut {
		notes = append(notes, "timed out")
	}
	if d.Idle {
		notes = append(notes, "idle too long")
	}
	if d.Canceled {
		notes = append(notes, "stopped")
	}
	if d.LogOmitted > 0 {
		notes = append(notes, fmt.Sprintf("%d of its %d bytes of output left out of its log (agent.log_cap)", d.LogOmitted, d.Bytes))
	}
	suffix := ""
	if len(notes) > 0 {
		suffix = ", " + strings.Join(notes, ", ")
	}
	t.printf("  %s exited %d after %s%s\n", what, d.ExitCode, shortDuration(d.DurationMS), suffix)
	if d.ExitCode != 0 && ev.Phase != state.PhaseImplement {
		t.tail(ev.Tick, ev.Phase)
	}
	if d.PlainText && ev.Phase == state.PhaseImplement {
		t.output(ev.Tick)
	}
}

// output writes the end of a plain-text agent's log: what it printed is
// all there is to show of what it did. Only the log's last bytes are read,
// whatever its size.
func (t *Transcript) output(tick int) {
	lines, cut := logEnd(state.RunLogPath(t.runDir, tick, state.PhaseImplement), outputTailLines)
	if cut {
		t.printf("  | … earlier output not shown: %s\n", line(t.Raw(tick)))
	}
	for _, l := range lines {
		t.printf("  | %s\n", line(l))
	}
}

// tail writes the end of a failed check's log.
func (t *Transcript) tail(tick int, phase string) {
	rel := filepath.Join("logs", fmt.Sprintf("tick-%04d-%s.log", tick, phase))
	out, err := logTail(t.runDir, rel)
	if err != nil || out == "" {
		return
	}
	lines := strings.Split(out, "\n")
	if len(lines) > verifyTailLines {
		lines = lines[len(lines)-verifyTailLines:]
	}
	for _, l := range lines {
		t.printf("  | %s\n", line(l))
	}
}

// tickEnd is the tick's closing line: what comes next and, when the tick
// event carries them, the figures of the tick.
func (t *Transcript) tickEnd(d state.TickEvent) {
	parts := []string{"next: " + line(d.Next)}
	outcome := line(d.Outcome)
	if v := d.TickVerify; v != nil && v.Verify != "" {
		took := shortDuration(v.VerifyMS)
		if strings.HasPrefix(outcome, "verify ") {
			outcome += " in " + took
		} else {
			outcome = strings.TrimSpace(outcome + fmt.Sprintf(" (verify %s in %s)", line(v.Verify), took))
		}
	}
	if outcome != "" {
		parts = append(parts, outcome)
	}
	if f := d.TickFiles; f != nil {
		parts = append(parts, fmt.Sprintf("files +%d ~%d -%d", f.Added, f.Modified, f.Deleted))
	}
	if d.CostUSD != nil {
		parts = append(parts, usd(*d.CostUSD))
	}
	if d.Closest != "" {
		parts = append(parts, "closest rule: "+line(d.Closest))
	}
	t.printf("  %s\n", strings.Join(parts, " · "))
}

// shortDuration is how long a step took, for a person.
func shortDuration(ms int64) string {
	return stopreasons.Took(time.Duration(ms) * time.Millisecond)
}

// line makes text from a file safe on one line of a terminal.
func line(s string) string { return termtext.VisibleLine(s) }

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// who names a worker of a parallel run and the milestone it has.
func who(worker, milestone int) string {
	return fmt.Sprintf("worker %d · milestone %d", worker, milestone)
}

// maxOutputLine bounds one line of an agent's output in a transcript, in
// bytes: a line without an end would otherwise be the whole tail read.
const maxOutputLine = 400

// logEnd returns the last n lines of the log at path, reading only its last
// tailBytes, without the blank lines at its end; cut says lines came before
// them. A missing or unreadable log has none.
func logEnd(path string, n int) (lines []string, cut bool) {
	// O_NONBLOCK: a FIFO the agent planted in the log's place must not
	// hold the reader; it is then refused as not a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return nil, false
	}
	start := max(info.Size()-tailBytes, 0)
	buf := make([]byte, info.Size()-start)
	k, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	buf = buf[:k]
	if start > 0 {
		cut = true
		// Drop the partial first line the cut left.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	text := strings.TrimRight(string(buf), " \t\r\n")
	if text == "" {
		return nil, cut
	}
	lines = strings.Split(text, "\n")
	if len(lines) > n {
		lines, cut = lines[len(lines)-n:], true
	}
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		lines[i] = l
		if len(l) > maxOutputLine {
			lines[i] = strings.ToValidUTF8(l[:maxOutputLine], "") + " …"
		}
	}
	return lines, cut
}

// untested writes a verify that passed without testing the change: no
// test ran, or the figure and the lines no verify command ran.
func (t *Transcript) untested(d state.UntestedEvent) {
	if d.Kind == stopreasons.UntestedNoTests {
		t.printf("  verify passed but ran no test (verify.require_tests)\n")
		return
	}
	covered := 0.0
	if d.Covered != nil {
		covered = *d.Covered
	}
	t.printf("  verify passed but ran %d of %d changed executable lines (%s, verify.coverage.min_changed %s)\n",
		d.Run, d.Executable, percentOf(covered), percentOf(d.MinChanged))
	for _, u := range d.Uncovered {
		t.printf("  not run: %s lines %s\n", line(u.File), line(u.Lines))
	}
	if d.UncoveredMore > 0 {
		t.printf("  not run: %s\n", stopreasons.Count(d.UncoveredMore, "more file", "more files"))
	}
}
