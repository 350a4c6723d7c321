package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/resume"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/termtext"
)

// liveLine shows the run's progress on stderr. On a terminal: the status
// line (tick, phase, milestone, elapsed/budget, cost, the closest stop rule)
// and below it the agent's latest activity, both cut to the terminal's
// width and redrawn in place, and one lasting line after every tick. Off a
// terminal: plain lines, one when a tick starts, one per thing the agent
// did, one after every tick, and no escape codes.
type liveLine struct {
	io    *IOStreams
	off   bool
	mu    sync.Mutex
	last  supervisor.Progress // the last status
	at    time.Time
	drawn int // the lines on screen: 0, 1 (status) or 2 (and activity)
	stopc chan struct{}
	wg    sync.WaitGroup

	// The agent's latest activity, shown below the status. It comes from
	// the goroutine that drains the agent's output, which must never wait
	// for the terminal: it only leaves the text here, under its own lock,
	// and the refresh goroutine draws it.
	actMu sync.Mutex
	act   string
	fresh bool // act changed since it was drawn

	// A parallel run on a terminal: one line per worker at work below the
	// run's line (workers under mu, each worker's activity wact under
	// actMu), since when the run is watched.
	workers map[int]workerView
	wact    map[int]string
	since   time.Time
}

// workerView is the latest progress of one worker of a parallel run.
type workerView struct {
	p  supervisor.Progress
	at time.Time
}

// drawEvery is how often a new activity is drawn on a terminal, and
// statusEvery how often the status line's clock moves.
const (
	drawEvery   = 100 * time.Millisecond
	statusEvery = time.Second
)

func newLiveLine(io *IOStreams, quiet bool) *liveLine {
	l := &liveLine{io: io, off: quiet, stopc: make(chan struct{})}
	if !quiet && io.ErrTTY {
		l.wg.Add(1)
		go l.refresh()
	}
	return l
}

// watching says whether a person sees the live line: then a command
// agent's latest output line is worth showing as its activity.
func (l *liveLine) watching() bool { return !l.off && l.io.ErrTTY }

func (l *liveLine) refresh() {
	defer l.wg.Done()
	t := time.NewTicker(drawEvery)
	defer t.Stop()
	var drawn time.Time
	for {
		select {
		case <-l.stopc:
			return
		case now := <-t.C:
			l.actMu.Lock()
			fresh := l.fresh
			l.actMu.Unlock()
			if !fresh && now.Sub(drawn) < statusEvery {
				continue
			}
			l.mu.Lock()
			if l.drawn > 0 && !stopped(l.last) {
				l.draw()
				drawn = now
			}
			l.mu.Unlock()
		}
	}
}

// declined says why an auto-resumable stop is not continued (--auto-resume):
// a spend cap, a reset beyond resume.max_wait, the automatic resumes used
// up. Like a warning it is said whatever the progress shows.
func (l *liveLine) declined(_ *state.State, d resume.Decision) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.io.ErrTTY {
		l.clear()
	}
	fmt.Fprintf(l.io.Err, "runr: not auto-resuming: %s\n", termtext.VisibleLine(d.Why))
}

func (l *liveLine) setActivity(text string) {
	l.actMu.Lock()
	l.act, l.fresh = text, true
	l.actMu.Unlock()
}

func (l *liveLine) activity() string {
	l.actMu.Lock()
	defer l.actMu.Unlock()
	l.fresh = false
	return l.act
}

func (l *liveLine) update(p supervisor.Progress) {
	switch m := p.Msg.(type) {
	case supervisor.ProgressWarning:
		// A warning is said whatever the progress shows (--quiet too).
		l.mu.Lock()
		if l.io.ErrTTY {
			l.clear()
		}
		fmt.Fprintf(l.io.Err, "runr: warning: %s\n", termtext.VisibleLine(m.Message))
		if l.io.ErrTTY && !l.off && l.last.Msg != nil {
			l.draw()
		}
		l.mu.Unlock()
	case supervisor.ProgressNote:
		if !l.off {
			l.news(m.Message)
		}
	case supervisor.ProgressActivity:
		if !l.off {
			l.showActivity(p.Worker, m.Activity)
		}
	default:
		if !l.off {
			l.status(p)
		}
	}
}

// news says a parallel run's own news (a milestone merged or requeued): a
// line of its own, on a terminal above the live line.
func (l *liveLine) news(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.io.ErrTTY {
		l.clear()
	}
	fmt.Fprintf(l.io.Err, "runr: %s\n", termtext.VisibleLine(msg))
	if l.io.ErrTTY && l.last.Msg != nil {
		l.draw()
	}
}

// showActivity shows what the agent (of worker, in a parallel run) is
// doing: on a terminal below the status, else one line per thing it did.
func (l *liveLine) showActivity(worker int, a agents.Activity) {
	text := activityText(a)
	if l.io.ErrTTY && worker > 0 {
		l.actMu.Lock()
		if l.wact == nil {
			l.wact = map[int]string{}
		}
		l.wact[worker], l.fresh = text, true
		l.actMu.Unlock()
		return
	}
	if l.io.ErrTTY {
		l.setActivity(text)
		return
	}
	if a.Kind != agents.ActivityOutput {
		if worker > 0 {
			text = fmt.Sprintf("worker %d: %s", worker, text)
		}
		l.mu.Lock()
		fmt.Fprintln(l.io.Err, "runr:   "+text)
		l.mu.Unlock()
	}
}

// status takes the progress that moves the status line: a tick started or
// ended, the run stopped, an auto-resume wait.
func (l *liveLine) status(p supervisor.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.io.ErrTTY && p.Worker > 0 {
		l.updateWorker(p)
		return
	}
	switch m := p.Msg.(type) {
	case supervisor.ProgressTickDone:
		if l.io.ErrTTY {
			l.clear()
			fmt.Fprintln(l.io.Err, fit(tickLine(p, m), l.io.ErrWidth()))
			l.setActivity("")
			l.last, l.at = p, time.Now()
			l.last.Msg = supervisor.ProgressTick{}
			l.draw()
		} else {
			fmt.Fprintln(l.io.Err, "runr: "+tickLine(p, m))
		}
		return
	case supervisor.ProgressStop:
		l.workers = nil
	}
	prev := l.last
	l.last, l.at = p, time.Now()
	_, tick := p.Msg.(supervisor.ProgressTick)
	if l.io.ErrTTY {
		if tick && p.Tick != prev.Tick {
			l.setActivity("")
		}
		l.draw()
		return
	}
	// Not a terminal: one line when a tick starts, nothing on redraws.
	wait, waiting := p.Msg.(supervisor.ProgressWait)
	prevWait, _ := prev.Msg.(supervisor.ProgressWait)
	if tick && (p.Tick != prev.Tick || p.Worker != prev.Worker) || waiting && wait.Until != prevWait.Until {
		fmt.Fprintln(l.io.Err, "runr: "+l.text(p))
	}
}

// stopped says whether p is the progress of a stop.
func stopped(p supervisor.Progress) bool {
	_, ok := p.Msg.(supervisor.ProgressStop)
	return ok
}

// updateWorker takes a worker's progress on a terminal: its line is
// redrawn, a finished tick leaves a lasting line above the live lines, and
// a worker whose milestone run stopped leaves the view.
func (l *liveLine) updateWorker(p supervisor.Progress) {
	if l.workers == nil {
		l.workers, l.since = map[int]workerView{}, time.Now()
	}
	k := p.Worker
	prev, had := l.workers[k]
	_, ended := p.Msg.(supervisor.ProgressTickDone)
	fresh := ended || stopped(p) || !had || prev.p.Tick != p.Tick
	if fresh {
		l.actMu.Lock()
		delete(l.wact, k)
		l.actMu.Unlock()
	}
	switch m := p.Msg.(type) {
	case supervisor.ProgressTickDone:
		l.clear()
		fmt.Fprintln(l.io.Err, fit(tickLine(p, m), l.io.ErrWidth()))
		p.Msg = supervisor.ProgressTick{}
		l.workers[k] = workerView{p: p, at: time.Now()}
	case supervisor.ProgressStop:
		delete(l.workers, k)
	default:
		l.workers[k] = workerView{p: p, at: time.Now()}
	}
	if l.last.Msg == nil || stopped(l.last) {
		// The run's own line: the refresh loop redraws while it is set.
		l.last = supervisor.Progress{RunID: p.RunID, Milestones: p.Milestones, Msg: supervisor.ProgressTick{}}
	}
	l.draw()
}

// drawWorkers draws a parallel run's live lines: the run's, then one per
// worker at work (its tick, phase, milestone and latest activity), leaving
// the cursor on the first.
func (l *liveLine) drawWorkers() {
	width := l.io.ErrWidth()
	keys := make([]int, 0, len(l.workers))
	for k := range l.workers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	l.actMu.Lock()
	acts := make(map[int]string, len(l.wact))
	for k, a := range l.wact {
		acts[k] = a
	}
	l.fresh = false
	l.actMu.Unlock()
	lines := []string{fmt.Sprintf("run %s · %s at work · %s", termtext.VisibleLine(l.last.RunID), stopreasons.Plural(len(keys), "worker"),
		stopreasons.Duration(time.Since(l.since)))}
	for _, k := range keys {
		w := l.workers[k]
		p := w.p
		if p.Elapsed > 0 {
			p.Elapsed += time.Since(w.at)
		}
		line := l.text(p)
		if a := acts[k]; a != "" {
			line += " · " + a
		}
		lines = append(lines, line)
	}
	l.clear()
	var b strings.Builder
	for i, line := range lines {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("\r\x1b[K")
		b.WriteString(l.io.ErrPainter().Dim(fit(line, width)))
	}
	if len(lines) > 1 {
		fmt.Fprintf(&b, "\x1b[%dA", len(lines)-1)
	}
	fmt.Fprint(l.io.Err, b.String())
	l.drawn = len(lines)
}

// draw redraws the status line and the activity line below it, leaving
// the cursor on the status line.
func (l *liveLine) draw() {
	if len(l.workers) > 0 {
		l.drawWorkers()
		return
	}
	p := l.last
	if p.Elapsed > 0 && !stopped(p) {
		p.Elapsed += time.Since(l.at)
	}
	width := l.io.ErrWidth()
	var b strings.Builder
	b.WriteString("\r\x1b[K")
	b.WriteString(l.io.ErrPainter().Dim(fit(l.text(p), width)))
	if act := l.activity(); act != "" || l.drawn == 2 {
		b.WriteString("\n\r\x1b[K")
		b.WriteString(fit("  "+act, width))
		b.WriteString("\x1b[1A")
		l.drawn = 2
	} else {
		l.drawn = 1
	}
	fmt.Fprint(l.io.Err, b.String())
}

// clear removes the live lines, leaving the cursor where they began.
func (l *liveLine) clear() {
	if l.drawn > 0 {
		seq := "\r\x1b[K" + strings.Repeat("\n\r\x1b[K", l.drawn-1)
		if l.drawn > 1 {
			seq += fmt.Sprintf("\x1b[%dA", l.drawn-1)
		}
		fmt.Fprint(l.io.Err, seq)
	}
	l.drawn = 0
}

func (l *liveLine) text(p supervisor.Progress) string {
	if w, ok := p.Msg.(supervisor.ProgressWait); ok {
		left := time.Until(w.Until)
		if !w.ResetAt.IsZero() {
			// A wait for a limit's reset: the message says which limit
			// resets when; the countdown runs to the end of the wait.
			return fmt.Sprintf("%s (in %s); resuming then", termtext.VisibleLine(w.Message), stopreasons.Duration(left))
		}
		return fmt.Sprintf("auto-resume in %s · %s", stopreasons.Duration(left), termtext.VisibleLine(w.Message))
	}
	parts := []string{
		fmt.Sprintf("tick %d", p.Tick),
		termtext.VisibleLine(p.Phase),
		fmt.Sprintf("milestone %d/%d", p.Milestone, p.Milestones),
	}
	if p.Worker > 0 {
		parts = append([]string{fmt.Sprintf("worker %d", p.Worker)}, parts...)
	}
	el := stopreasons.Duration(p.Elapsed)
	if p.Budget > 0 {
		el += "/" + stopreasons.Duration(p.Budget)
	}
	parts = append(parts, el)
	if p.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", p.CostUSD))
	}
	if c := p.Closest; c != nil && c.Progress > 0 {
		parts = append(parts, fmt.Sprintf("closest: %s %.0f%%", termtext.VisibleLine(c.Name), c.Progress*100))
	}
	return strings.Join(parts, " · ")
}

// tickLine is the line after a tick: what it worked on and came to, the
// files its agent call changed, the checks, the cost so far and the stop
// rule closest to firing.
func tickLine(p supervisor.Progress, d supervisor.ProgressTickDone) string {
	outcome := termtext.VisibleLine(d.Outcome)
	if d.Verify != "" {
		if strings.HasPrefix(d.Outcome, "verify ") {
			outcome += " in " + stopreasons.Took(d.VerifyTime)
		} else {
			outcome += fmt.Sprintf(" (verify %s in %s)", termtext.VisibleLine(d.Verify), stopreasons.Took(d.VerifyTime))
		}
	}
	parts := []string{
		fmt.Sprintf("tick %d", p.Tick),
		fmt.Sprintf("milestone %d/%d", p.Milestone, p.Milestones),
		termtext.VisibleLine(p.Phase),
		outcome,
	}
	if p.Worker > 0 {
		parts = append([]string{fmt.Sprintf("worker %d", p.Worker)}, parts...)
	}
	if f := d.Files; f != nil {
		parts = append(parts, fmt.Sprintf("files +%d ~%d -%d", f.Added, f.Modified, f.Deleted))
	}
	parts = append(parts, fmt.Sprintf("$%.2f", p.CostUSD))
	if c := p.Closest; c != nil && c.Progress > 0 {
		parts = append(parts, fmt.Sprintf("closest: %s %.0f%%", termtext.VisibleLine(c.Name), c.Progress*100))
	}
	return strings.Join(parts, " · ")
}

// activityText is one thing the agent did, on one line.
func activityText(a agents.Activity) string {
	text := termtext.VisibleLine(a.Text)
	switch a.Kind {
	case agents.ActivityTool:
		return strings.TrimSpace("> " + termtext.VisibleLine(a.Tool) + " " + text)
	case agents.ActivityToolError:
		return "! " + termtext.VisibleLine(a.Tool) + " failed: " + text
	case agents.ActivityOutput:
		return "| " + text
	}
	return "\" " + text
}

// fit makes s one line of at most width-1 columns of a terminal, with an
// ellipsis where it was cut (a tab becomes a space, a wide character counts
// two columns); width 0 leaves it whole.
func fit(s string, width int) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if width <= 0 || displayWidth(s) <= width-1 {
		return s
	}
	cols := 0
	for i, r := range s {
		w := runeColumns(r)
		if cols+w > width-2 {
			return s[:i] + "…"
		}
		cols += w
	}
	return s
}

func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeColumns(r)
	}
	return n
}

// runeColumns is how many columns a terminal gives r: none for a
// combining mark, two for the wide characters of East Asian scripts and
// most emoji, one otherwise.
func runeColumns(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), r == 0x200B:
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF && r != 0x303F,
		r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F,
		r >= 0x1F900 && r <= 0x1F9FF, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}

// done clears the live line before the summary is printed.
func (l *liveLine) done() {
	l.mu.Lock()
	select {
	case <-l.stopc:
	default:
		close(l.stopc)
	}
	l.clear()
	l.mu.Unlock()
	l.wg.Wait()
	l.stopc = make(chan struct{})
}
