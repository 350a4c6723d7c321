// Package watch is `runr watch`: a full-screen terminal dashboard of the
// runs of a store. It reads what `runr status` and `runr logs --follow`
// read, and changes nothing but through the stop function it is given
// (`runr stop`'s own). The model is a pure Bubble Tea model: data reaches
// it as messages from commands, and its view is a function of it, so a
// test sends messages and reads the text.
package watch

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// Defaults of Options.
const (
	DefaultInterval = time.Second
	followInterval  = 200 * time.Millisecond
	// MinWidth is the narrowest terminal the dashboard draws in; below it
	// shows a one-line notice.
	MinWidth = 40
	// maxFollowLines bounds the transcript lines the follow view keeps.
	maxFollowLines = 5000
)

// Options are what the dashboard needs from its caller.
type Options struct {
	// Source reads the runs.
	Source *Source
	// Stop asks a run to stop, as `runr stop <id>` does, and returns
	// what it says.
	Stop func(id string) (string, error)
	// Color paints the screen; off for NO_COLOR and --no-color.
	Color bool
	// Interval is how often the runs are read again (DefaultInterval when 0).
	Interval time.Duration
}

// Messages the model handles besides Bubble Tea's keys and sizes.
type (
	// RunsMsg carries the runs as read by a refresh.
	RunsMsg struct {
		Runs []Run
		Err  error
	}
	refreshMsg struct{}
	// FollowMsg carries new transcript lines of the followed run.
	FollowMsg struct {
		Gen   int
		Lines []string
		Ended bool
		Err   error
	}
	followPollMsg struct{ gen int }
	// StopMsg is the outcome of a stop request.
	StopMsg struct {
		ID   string
		Text string
		Err  error
	}
)

// Model is the dashboard's state.
type Model struct {
	opts          Options
	width, height int

	runs    []Run
	loaded  bool
	loadErr string
	sel     string // the selected run's id

	confirm string // the run a stop waits to be confirmed for
	notice  string // what the last action came to
	help    bool

	follow *followView
	gen    int // the follow view's generation: messages of an older one are dropped
}

type followView struct {
	id    string
	gen   int
	lines []string
	ended bool
	err   string
	src   *follower
}

// New returns the dashboard's model.
func New(opts Options) Model {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return Model{opts: opts, width: 80, height: 24}
}

// Init reads the runs at once.
func (m Model) Init() tea.Cmd { return m.load() }

func (m Model) load() tea.Cmd {
	src := m.opts.Source
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		runs, err := src.Runs()
		return RunsMsg{Runs: runs, Err: err}
	}
}

// Selected is the id of the selected run, "" when there is none.
func (m Model) Selected() string { return m.sel }

// Following is the id of the run whose transcript is shown, "" on the list.
func (m Model) Following() string {
	if m.follow == nil {
		return ""
	}
	return m.follow.id
}

// Confirming is the id of the run a stop waits to be confirmed for.
func (m Model) Confirming() string { return m.confirm }

// Update applies a message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case RunsMsg:
		m.loaded = true
		m.loadErr = ""
		if msg.Err != nil {
			m.loadErr = msg.Err.Error()
		} else {
			m.runs = msg.Runs
			m.keepSelection()
		}
		interval := m.opts.Interval
		return m, tea.Tick(interval, func(time.Time) tea.Msg { return refreshMsg{} })
	case refreshMsg:
		return m, m.load()
	case FollowMsg:
		if m.follow == nil || msg.Gen != m.follow.gen {
			return m, nil
		}
		f := *m.follow
		f.lines = append(f.lines, msg.Lines...)
		if over := len(f.lines) - maxFollowLines; over > 0 {
			f.lines = append([]string(nil), f.lines[over:]...)
		}
		if msg.Err != nil {
			f.err = msg.Err.Error()
		}
		f.ended = msg.Ended
		m.follow = &f
		if msg.Ended || msg.Err != nil {
			return m, nil
		}
		gen := f.gen
		return m, tea.Tick(followInterval, func(time.Time) tea.Msg { return followPollMsg{gen: gen} })
	case followPollMsg:
		if m.follow == nil || msg.gen != m.follow.gen {
			return m, nil
		}
		return m, m.follow.poll()
	case StopMsg:
		if msg.Err != nil {
			m.notice = "stop " + msg.ID + ": " + msg.Err.Error()
		} else {
			m.notice = msg.Text
		}
		return m, nil
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	key := k.String()
	if key == "ctrl+c" {
		return m, tea.Quit
	}
	if m.confirm != "" {
		id := m.confirm
		m.confirm = ""
		if key == "y" || key == "Y" {
			m.notice = "asking run " + id + " to stop…"
			return m, m.stop(id)
		}
		m.notice = "run " + id + " not stopped"
		return m, nil
	}
	if m.follow != nil {
		switch key {
		case "esc", "q", "backspace", "left", "h":
			src := m.follow.src
			m.follow = nil
			return m, func() tea.Msg { src.close(); return nil }
		}
		return m, nil
	}
	switch key {
	case "q":
		return m, tea.Quit
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "home", "g":
		if len(m.runs) > 0 {
			m.sel = m.runs[0].ID
		}
	case "end", "G":
		if len(m.runs) > 0 {
			m.sel = m.runs[len(m.runs)-1].ID
		}
	case "enter", "right", "l":
		if m.sel == "" || m.opts.Source == nil {
			return m, nil
		}
		m.gen++
		m.follow = &followView{id: m.sel, gen: m.gen, src: newFollower(m.opts.Source.Store, m.sel)}
		return m, m.follow.poll()
	case "s":
		if m.sel != "" {
			m.confirm = m.sel
			m.notice = ""
		}
	case "?":
		m.help = !m.help
	}
	return m, nil
}

func (m Model) stop(id string) tea.Cmd {
	stop := m.opts.Stop
	if stop == nil {
		return nil
	}
	return func() tea.Msg {
		text, err := stop(id)
		return StopMsg{ID: id, Text: text, Err: err}
	}
}

func (m *Model) index() int {
	for i, r := range m.runs {
		if r.ID == m.sel {
			return i
		}
	}
	return -1
}

func (m *Model) move(d int) {
	if len(m.runs) == 0 {
		return
	}
	i := max(0, min(len(m.runs)-1, m.index()+d))
	m.sel = m.runs[i].ID
}

// keepSelection keeps the selected run selected across refreshes, and
// selects the first run when the selected one is gone.
func (m *Model) keepSelection() {
	if m.index() >= 0 {
		return
	}
	m.sel = ""
	if len(m.runs) > 0 {
		m.sel = m.runs[0].ID
	}
}

// View draws the screen.
func (m Model) View() string {
	w, h := m.width, m.height
	if w <= 0 {
		w = 80
	}
	if h <= 0 {
		h = 24
	}
	if w < MinWidth {
		return cut(fmt.Sprintf("needs %d columns, has %d; q quits", MinWidth, w), w)
	}
	var lines []string
	if m.follow != nil {
		lines = m.followLines(w, h)
	} else {
		lines = m.listLines(w, h)
	}
	for i := range lines {
		lines[i] = cut(lines[i], w)
	}
	return strings.Join(lines, "\n")
}

// cut fits a line into w display columns; it never wraps.
func cut(s string, w int) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

func (m Model) listLines(w, h int) []string {
	p := painter(m.opts.Color)
	live := 0
	for _, r := range m.runs {
		if r.Live {
			live++
		}
	}
	head := p.bold("runr watch") + fmt.Sprintf(" · %d live", live)
	if n := len(m.runs) - live; n > 0 {
		head += fmt.Sprintf(" · %d recent", n)
	}
	if m.loadErr != "" {
		head += " · " + p.red("cannot read the runs: "+line(m.loadErr))
	}
	top := []string{head, ""}

	var body []string
	selStart, selEnd := -1, -1
	stoppedHeader := false
	switch {
	case !m.loaded:
		body = append(body, "reading the runs…")
	case len(m.runs) == 0:
		body = append(body, "No runs yet. Start one with: runr run --task TASK.md -- AGENT...")
	case live == 0:
		body = append(body, "No live run.", "")
	}
	for _, r := range m.runs {
		if !r.Live && !stoppedHeader {
			stoppedHeader = true
			body = append(body, p.dim("Recent runs"))
		}
		start := len(body)
		body = append(body, m.runLines(p, r)...)
		if r.ID == m.sel {
			selStart, selEnd = start, len(body)
		}
		if r.Live {
			body = append(body, "")
		}
	}

	foot := []string{"", m.footer(p)}
	if m.help {
		foot = append([]string{"", "↑/↓ or k/j select · g/G first/last · enter follow the transcript (esc back)",
			"s stop the selected run (after y) · q quit: every run keeps running"}, foot...)
	}
	avail := max(1, h-len(top)-len(foot))
	// Scroll so that the selected run is on screen.
	off := 0
	if selEnd > avail {
		off = min(selStart, selEnd-avail)
	}
	body = body[off:]
	if len(body) > avail {
		body = body[:avail]
	}
	for len(body) < avail {
		body = append(body, "")
	}
	return append(append(top, body...), foot...)
}

func (m Model) footer(p painter) string {
	if m.confirm != "" {
		return p.yellow("stop run " + m.confirm + "? y/n")
	}
	keys := "↑/↓ select · enter follow · s stop · ? help · q quit"
	if m.notice != "" {
		return line(m.notice) + " · " + p.dim(keys)
	}
	return p.dim(keys)
}

// runLines draws one run: a live run over several lines, another on one.
func (m Model) runLines(p painter, r Run) []string {
	selected := r.ID == m.sel
	mark := "  "
	if selected {
		mark = "> "
	}
	id := r.ID
	if selected {
		id = p.reverse(id)
	}
	if !r.Live {
		// Dimmed: a run that is not live is history.
		s := "  " + line(r.Status)
		if r.Stop != "" {
			s += fmt.Sprintf("  %s (exit %d)", line(r.Stop), r.ExitCode)
		}
		if r.Err != "" {
			s += "  " + line(r.Err)
		} else {
			s += fmt.Sprintf("  %d/%d approved  %s", r.Approved, r.Milestones, duration(r.Elapsed))
		}
		if !selected {
			id = p.dim(id)
		}
		return []string{mark + id + p.dim(s)}
	}
	if r.Err != "" {
		return []string{mark + id + "  " + p.cyan(r.Status) + "  " + p.red(line(r.Err))}
	}
	first := mark + id + "  " + p.cyan(r.Status) + fmt.Sprintf("  milestone %d/%d  %s  tick %d", r.Milestone, r.Milestones, line(r.Phase), r.Tick)
	if r.Workers > 0 {
		first += fmt.Sprintf("  workers %d", r.Workers)
	}
	out := []string{first}
	if r.Goal != "" {
		out = append(out, "    goal     "+line(r.Goal))
	}
	budget := "time " + duration(r.Elapsed)
	if r.Budget > 0 {
		budget += " / " + duration(r.Budget)
	}
	budget += " · cost " + usd(r.CostUSD)
	if r.MaxCostUSD > 0 {
		budget += " / " + usd(r.MaxCostUSD)
	}
	out = append(out, "    budget   "+budget)
	rule := "none close"
	if c := r.Closest; c != nil {
		pct := line(c.Name) + " " + percent(c.Progress)
		switch {
		case c.Progress >= 0.8:
			pct = p.red(pct)
		case c.Progress >= 0.5:
			pct = p.yellow(pct)
		}
		rule = pct + " · " + line(c.Message)
	}
	out = append(out, "    closest  "+rule)
	act := r.Activity
	if act == "" {
		act = "-"
	}
	out = append(out, "    activity "+line(act))
	return out
}

func (m Model) followLines(w, h int) []string {
	p := painter(m.opts.Color)
	f := m.follow
	head := p.bold("run "+f.id) + " · transcript"
	switch {
	case f.err != "":
		head += " · " + p.red(line(f.err))
	case f.ended:
		head += " · the run is not live"
	default:
		head += " · following"
	}
	foot := p.dim("esc/q back to the runs · ctrl+c quit")
	avail := max(1, h-3)
	body := f.lines
	if len(body) > avail {
		body = body[len(body)-avail:]
	}
	out := []string{head, ""}
	for _, l := range body {
		out = append(out, line(l))
	}
	for len(out) < avail+2 {
		out = append(out, "")
	}
	return append(out, foot)
}

// line is text from a run (an agent, the task, a state.json) made safe to
// show on one line of the screen.
func line(s string) string { return termtext.VisibleLine(s) }

// percent is a progress as a whole percentage; below 1% it says so
// rather than 0%.
func percent(f float64) string {
	if f > 0 && f < 0.01 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", f*100)
}

func usd(v float64) string { return fmt.Sprintf("$%.2f", v) }

// duration is a duration for a person, as every view of a run writes it.
func duration(d time.Duration) string { return stopreasons.Duration(d) }

// painter colours text, or leaves it plain.
type painter bool

func (p painter) sgr(code, s string) string {
	if !p {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p painter) bold(s string) string    { return p.sgr("1", s) }
func (p painter) dim(s string) string     { return p.sgr("2", s) }
func (p painter) reverse(s string) string { return p.sgr("7", s) }
func (p painter) red(s string) string     { return p.sgr("31", s) }
func (p painter) yellow(s string) string  { return p.sgr("33", s) }
func (p painter) cyan(s string) string    { return p.sgr("36", s) }
