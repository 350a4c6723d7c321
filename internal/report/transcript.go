package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/termtext"
)

// verifyTailLines is how much of a failed check's output a transcript shows.
const verifyTailLines = 8

// Transcript writes a run's timeline as a readable account, tick by tick:
// the milestone, what the agent did, the checks and their failing output,
// each tick's outcome, and the stop. Events go in one at a time (Event), so
// the same writer serves a finished run and one followed live. Text that came
// from an agent, a log or the task is written with its control characters
// made visible.
type Transcript struct {
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
	d := eventData(ev.Data)
	switch ev.Type {
	case "run_started":
		src := "--prompt"
		if f := d.str("task_file"); f != "" {
			src = f
		}
		t.printf("run started · task %s · %s\n", line(src), plural(d.num("milestones"), "milestone"))
		return
	case "run_resumed":
		t.milestone = max(d.num("milestone"), 1)
		t.printf("run resumed at milestone %d, %s\n", t.milestone, line(d.str("phase")))
		return
	case "stop":
		t.printf("stop: %s (exit %d): %s\n", line(d.str("code")), d.num("exit_code"), line(d.str("message")))
		return
	case "worker_started", "worker_done", "merge", "requeue":
		// A parallel run's own events: its workers' ticks are in their runs.
		t.parallelEvent(ev.Type, d)
		return
	}
	t.writeHeader(ev)
	switch ev.Type {
	case "activity":
		t.activity(d)
	case "process_ended":
		t.processEnded(ev, d)
	case "guard":
		t.printf("  guard %s: %s\n", line(d.str("rule")), line(strings.Join(d.strs("files"), ", ")))
	case "attempt":
		if sig := d.str("signature"); sig != "" {
			t.printf("  attempt %s (error %s)\n", line(d.str("outcome")), line(sig))
		} else {
			t.printf("  attempt %s\n", line(d.str("outcome")))
		}
	case "milestone_approved":
		t.printf("  milestone %d approved\n", d.num("milestone"))
	case "milestone_failed":
		t.printf("  milestone %d failed after %s\n", d.num("milestone"), plural(d.num("retries"), "retry"))
	case "checkpoint_commit":
		t.printf("  commit %s\n", line(short(d.str("sha"))))
	case "leftovers_stopped":
		t.printf("  stopped %d process(es) the agent left behind\n", len(d.strs("pids")))
	case "worktree_created":
		t.printf("  worktree %s on branch %s\n", line(d.str("path")), line(d.str("branch")))
	case "tick":
		t.tickEnd(d)
	}
	t.track(ev)
}

// track follows the milestone the next tick works on.
func (t *Transcript) track(ev state.Event) {
	if ev.Type == "tick" || ev.Type == "run_resumed" {
		if m := eventData(ev.Data).num("milestone"); m > 0 {
			t.milestone = m
		}
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
func (t *Transcript) activity(d eventData) {
	text := line(d.str("text"))
	switch d.str("kind") {
	case "tool":
		t.printf("  > %s %s\n", line(d.str("tool")), text)
	case "tool_error":
		t.printf("  ! %s failed: %s\n", line(d.str("tool")), text)
	default:
		t.printf("  \" %s\n", text)
	}
}

func (t *Transcript) processEnded(ev state.Event, d eventData) {
	what := "agent"
	if ev.Phase != state.PhaseImplement {
		what = ev.Phase
	}
	var notes []string
	if d.boolean("timed_out") {
		notes = append(notes, "timed out")
	}
	if d.boolean("idle") {
		notes = append(notes, "idle too long")
	}
	if d.boolean("canceled") {
		notes = append(notes, "stopped")
	}
	suffix := ""
	if len(notes) > 0 {
		suffix = ", " + strings.Join(notes, ", ")
	}
	code := d.num("exit_code")
	t.printf("  %s exited %d after %s%s\n", what, code, shortDuration(int64(d.num("duration_ms"))), suffix)
	if code != 0 && ev.Phase != state.PhaseImplement {
		t.tail(ev.Tick, ev.Phase)
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
func (t *Transcript) tickEnd(d eventData) {
	parts := []string{"next: " + line(d.str("next"))}
	outcome := line(d.str("outcome"))
	if v := d.str("verify"); v != "" {
		took := shortDuration(int64(d.num("verify_ms")))
		if strings.HasPrefix(outcome, "verify ") {
			outcome += " in " + took
		} else {
			outcome = strings.TrimSpace(outcome + fmt.Sprintf(" (verify %s in %s)", line(v), took))
		}
	}
	if outcome != "" {
		parts = append(parts, outcome)
	}
	if d.has("added") || d.has("modified") || d.has("deleted") {
		parts = append(parts, fmt.Sprintf("files +%d ~%d -%d", d.num("added"), d.num("modified"), d.num("deleted")))
	}
	if d.has("cost_usd") {
		parts = append(parts, usd(d.float("cost_usd")))
	}
	if c := d.str("closest"); c != "" {
		parts = append(parts, "closest rule: "+line(c))
	}
	t.printf("  %s\n", strings.Join(parts, " · "))
}

// shortDuration is a duration for a person, in milliseconds under a second.
func shortDuration(ms int64) string {
	if ms < 1000 {
		return strconv.FormatInt(max(ms, 0), 10) + "ms"
	}
	return duration(ms)
}

// eventData reads an event's data, whatever a damaged file put there.
type eventData map[string]any

func (d eventData) has(k string) bool { _, ok := d[k]; return ok }

func (d eventData) str(k string) string {
	s, _ := d[k].(string)
	return s
}

func (d eventData) float(k string) float64 {
	f, _ := d[k].(float64)
	return f
}

func (d eventData) num(k string) int { return int(d.float(k)) }

func (d eventData) boolean(k string) bool {
	b, _ := d[k].(bool)
	return b
}

func (d eventData) strs(k string) []string {
	var out []string
	list, _ := d[k].([]any)
	for _, v := range list {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// line makes text from a file safe on one line of a terminal.
func line(s string) string { return termtext.VisibleLine(s) }

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// parallelEvent writes one line for an event of a parallel run's
// coordinator: a worker took a milestone or finished its run, a merge, a
// requeue (docs/parallel.md).
func (t *Transcript) parallelEvent(typ string, d eventData) {
	who := fmt.Sprintf("worker %d · milestone %d", d.num("worker"), d.num("milestone"))
	switch typ {
	case "worker_started":
		if r := d.num("requeue"); r > 0 {
			t.printf("%s started on %s (returned %d×)\n", who, line(d.str("branch")), r)
		} else {
			t.printf("%s started on %s\n", who, line(d.str("branch")))
		}
	case "worker_done":
		if e := d.str("error"); e != "" {
			t.printf("%s: its run failed: %s\n", who, line(e))
		} else {
			t.printf("%s: its run stopped: %s\n", who, line(d.str("code")))
		}
	case "merge":
		switch d.str("outcome") {
		case "merged":
			t.printf("%s merged, commit %s\n", who, line(shortSHA(d.str("commit"))))
		case "conflict":
			t.printf("%s did not merge: conflict in %s; undone\n", who, line(strings.Join(d.strs("files"), ", ")))
		default:
			t.printf("%s did not merge: %s failed on the merged tree; undone\n", who, line(d.str("command")))
		}
	case "requeue":
		t.printf("%s returned to a worker (%d)\n", who, d.num("requeue"))
	}
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
