package watch

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

const (
	liveID    = "20261124T100000Z-aaaaaa"
	stoppedID = "20261124T090000Z-bbbbbb"
	crashedID = "20261124T080000Z-cccccc"
)

// store holds three runs written by the state package: a live one (its
// lock held by this test), one stopped by `runr stop`, and one whose state
// says running but whose lock is free (crashed).
type fixture struct {
	store *state.Store
	lock  *state.Lock
	now   time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, err := state.Open(t.TempDir())
	require.NoError(t, err)
	now := time.Now().UTC()

	stopped := &state.State{RunID: stoppedID, RunStatus: stopreasons.RunStopped, Phase: state.PhaseStopped,
		CreatedAt: now.Add(-2 * time.Hour), ElapsedMS: 75_000, Tick: 6,
		Milestones: []state.Milestone{{Goal: "one", Status: state.MilestoneApproved}, {Goal: "two", Status: state.MilestoneInProgress}},
		Statistics: state.Statistics{TotalMilestones: 2, Approved: 1},
		StopReason: state.NewStopReason(stopreasons.UserStopped, 1, "stopped by runr stop")}
	require.NoError(t, store.Create(stopped))

	crashed := &state.State{RunID: crashedID, RunStatus: stopreasons.RunRunning, Phase: state.PhaseImplement,
		CreatedAt: now.Add(-3 * time.Hour), Tick: 2, Milestones: []state.Milestone{{Goal: "x", Status: state.MilestoneInProgress}},
		Statistics: state.Statistics{TotalMilestones: 1}}
	require.NoError(t, store.Create(crashed))

	live := &state.State{RunID: liveID, RunStatus: stopreasons.RunRunning, Phase: state.PhaseImplement,
		CreatedAt: now.Add(-time.Minute), ElapsedMS: 42_000, Tick: 5, Iteration: 4,
		Budget: state.Budget{TimeMS: 30 * 60_000, MaxTicks: 200, MaxCostUSD: 5},
		Milestones: []state.Milestone{
			{Goal: "write a.txt", Status: state.MilestoneApproved},
			{Goal: "make the tests pass \x1b]0;pwned\x07", Status: state.MilestoneInProgress},
			{Goal: "three", Status: state.MilestonePending},
		},
		MilestoneIndex: 1,
		Statistics:     state.Statistics{TotalMilestones: 3, Attempted: 1, Approved: 1},
		Counters:       state.Counters{Noop: 2, NoProgress: 4, Attempts: 3},
		Usage:          state.Usage{CostUSD: 1.25},
		// What the run recorded after its last tick: a custom condition.
		Conditions: []state.ConditionProg{{Name: "stop.failure[0]", Progress: 0.1, Message: "1 of 10 failed verify runs in a row"}},
		Task:       state.Task{Prompt: "- [x] write a.txt\n- [ ] make the tests pass\n- [ ] three\n"},
	}
	// The run started with no_progress raised to 20: 4 of 20 is far, and
	// noop (2 of 3) is the closest rule, which the defaults would not say
	// (no_progress 4 of 5).
	config := map[string]any{"stop": map[string]any{"no_progress": 20, "noop": 3}}
	lock, err := store.CreateRunLocked(live, config)
	require.NoError(t, err)
	t.Cleanup(func() { lock.Release() })
	tl, err := store.OpenTimeline(liveID)
	require.NoError(t, err)
	require.NoError(t, tl.Append(0, "", state.RunStartedEvent{Milestones: 3}))
	require.NoError(t, tl.Append(1, state.PhaseImplement, state.TickEvent{Phase: "implement", Next: "verify", Milestone: 1, Outcome: "agent done"}))
	require.NoError(t, tl.Append(5, state.PhaseImplement, state.ProcessStartedEvent{PID: 1, PGID: 1, Argv0: "/usr/bin/claude"}))
	require.NoError(t, tl.Append(5, state.PhaseImplement, state.ActivityEvent{Kind: "tool", Tool: "Edit", Text: "a_test.go\x1b[2J"}))
	require.NoError(t, tl.Close())
	return &fixture{store: store, lock: lock, now: now}
}

func (f *fixture) source() *Source {
	src := NewSource(f.store)
	src.Now = func() time.Time { return f.now }
	return src
}

func (f *fixture) runs(t *testing.T) []Run {
	t.Helper()
	src := f.source()
	defer src.Close()
	runs, err := src.Runs()
	require.NoError(t, err)
	return runs
}

func TestSourceReadsLiveRunsThenRecentOnes(t *testing.T) {
	f := newFixture(t)
	runs := f.runs(t)
	require.Len(t, runs, 3)

	live := runs[0]
	assert.Equal(t, liveID, live.ID)
	assert.True(t, live.Live)
	assert.Equal(t, stopreasons.RunRunning, live.Status)
	assert.Equal(t, 2, live.Milestone)
	assert.Equal(t, 3, live.Milestones)
	assert.Equal(t, "make the tests pass \x1b]0;pwned\x07", live.Goal)
	assert.Equal(t, state.PhaseImplement, live.Phase)
	assert.Equal(t, 5, live.Tick)
	assert.Equal(t, 30*time.Minute, live.Budget)
	assert.GreaterOrEqual(t, live.Elapsed, 42*time.Second, "what state.json recorded, and the time since")
	assert.Equal(t, 1.25, live.CostUSD)
	assert.Equal(t, 5.0, live.MaxCostUSD)
	assert.Equal(t, 0, live.Workers, "a sequential run has no worker slots")
	require.NotNil(t, live.Closest)
	assert.Equal(t, "noop", live.Closest.Name, "the rules of the run's config.json")
	assert.InDelta(t, 2.0/3, live.Closest.Progress, 0.001)
	assert.Equal(t, "> Edit a_test.go\x1b[2J", live.Activity, "the latest activity event")

	assert.Equal(t, stoppedID, runs[1].ID)
	assert.False(t, runs[1].Live)
	assert.Equal(t, "user_stopped", runs[1].Stop)
	assert.Equal(t, 130, runs[1].ExitCode)
	assert.Equal(t, 1, runs[1].Approved)

	assert.Equal(t, crashedID, runs[2].ID)
	assert.False(t, runs[2].Live)
	assert.Equal(t, stopreasons.RunCrashed, runs[2].Status)
	assert.Empty(t, runs[2].Stop)
}

func TestSourceFollowsStateAndTimelineAcrossReads(t *testing.T) {
	f := newFixture(t)
	src := f.source()
	defer src.Close()
	_, err := src.Runs()
	require.NoError(t, err)

	st, err := f.store.Load(liveID)
	require.NoError(t, err)
	st.Phase, st.Tick = state.PhaseVerify, 6
	st.Counters.Noop = 0
	require.NoError(t, f.store.Save(st))
	tl, err := f.store.OpenTimeline(liveID)
	require.NoError(t, err)
	require.NoError(t, tl.Append(6, state.PhaseImplement, state.ActivityEvent{Kind: "message", Text: "all green"}))
	require.NoError(t, tl.Close())

	runs, err := src.Runs()
	require.NoError(t, err)
	assert.Equal(t, state.PhaseVerify, runs[0].Phase, "state.json is read again once it changed")
	assert.Equal(t, 6, runs[0].Tick)
	assert.Equal(t, "\" all green", runs[0].Activity)
	require.NotNil(t, runs[0].Closest, "noop reset: the cost (25%) is closest, then no_progress (20%)")
	assert.Equal(t, "budget.max_cost_usd", runs[0].Closest.Name)
	assert.Equal(t, "Cost $1.25 of the $5.00 budget", runs[0].Closest.Message)

	// Once the run stops it moves below, with its stop.
	st.RunStatus, st.Phase = stopreasons.RunStopped, state.PhaseStopped
	st.StopReason = state.NewStopReason(stopreasons.UserStopped, 1, "stopped")
	require.NoError(t, f.store.Save(st))
	require.NoError(t, f.lock.Release())
	runs, err = src.Runs()
	require.NoError(t, err)
	assert.False(t, runs[0].Live)
	assert.Equal(t, "user_stopped", runs[0].Stop)
}

func TestRulesOfARunInItsFirstTick(t *testing.T) {
	// Nothing recorded yet: the rules come from the counters and the budget.
	st := &state.State{Tick: 8, Budget: state.Budget{TimeMS: 60_000, MaxTicks: 10},
		Milestones: []state.Milestone{{Goal: "g", Status: state.MilestoneInProgress}}}
	rules := recordedRules(t.TempDir()) // no config.json: the defaults
	got := Rules(st, rules, 30*time.Second)
	names := map[string]Rule{}
	for _, r := range got {
		names[r.Name] = r
	}
	for _, n := range []string{"circuit_breaker", "max_milestone_retries", "same_error", "noop", "no_progress", "max_edge", "budget.max_ticks", "budget.time"} {
		assert.Contains(t, names, n)
	}
	assert.Equal(t, "30s elapsed (limit 1m)", names["budget.time"].Message)
	c := closest(got)
	require.NotNil(t, c)
	assert.Equal(t, "budget.max_ticks", c.Name)
	assert.InDelta(t, 0.8, c.Progress, 0.001)

	// A run that has not moved has no rule close.
	assert.Nil(t, closest(Rules(&state.State{}, rules, 0)))
}

// model is a dashboard fed with the fixture's runs at a size.
func model(t *testing.T, f *fixture, color bool, w, h int, stop func(string) (string, error)) Model {
	t.Helper()
	m := New(Options{Source: f.source(), Color: color, Stop: stop})
	m = update(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	return update(t, m, RunsMsg{Runs: f.runs(t)})
}

func update(t *testing.T, m Model, msg tea.Msg) Model {
	t.Helper()
	next, _ := m.Update(msg)
	return next.(Model)
}

func key(s string) tea.KeyMsg {
	switch s {
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func checkFits(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	assert.LessOrEqual(t, len(lines), h, "the view fits the height:\n%s", view)
	for _, l := range lines {
		assert.LessOrEqual(t, ansi.StringWidth(l), w, "line %q is wider than %d", l, w)
	}
}

func TestViewAtWidths(t *testing.T) {
	f := newFixture(t)
	for _, w := range []int{160, 100, 60, MinWidth} {
		m := model(t, f, false, w, 30, nil)
		v := m.View()
		checkFits(t, v, w, 30)
		assert.Contains(t, v, "runr watch · 1 live · 2 recent")
		assert.Contains(t, v, "> "+liveID, "the selected live run, first")
	}

	m := model(t, f, false, 120, 30, nil)
	v := m.View()
	assert.Contains(t, v, "> "+liveID+"  running  milestone 2/3  implement  tick 5")
	assert.Contains(t, v, `goal     make the tests pass \x1b]0;pwned\x07`, "control characters shown, not sent")
	assert.Contains(t, v, "budget   time ")
	assert.Contains(t, v, " / 30m · cost $1.25 / $5.00")
	assert.Contains(t, v, "closest  noop 67% · 2 agent calls in a row that changed nothing")
	assert.Contains(t, v, `activity > Edit a_test.go\x1b[2J`)
	assert.Contains(t, v, "  "+stoppedID+"  stopped  user_stopped (exit 130)  1/2 approved  1m15s")
	assert.Contains(t, v, "  "+crashedID+"  crashed")
	assert.NotContains(t, v, "workers", "no worker slots, no field")
	assert.NotContains(t, v, "\x1b[", "no colour without Color")
	assert.NotContains(t, v, "\x07")

	// A narrow terminal cuts lines; it never wraps them.
	m = model(t, f, false, 50, 30, nil)
	for _, l := range strings.Split(m.View(), "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(l), 50)
	}
	assert.Contains(t, m.View(), "…")

	// Below the minimum: one line that says so.
	m = model(t, f, false, MinWidth-1, 30, nil)
	assert.Equal(t, "needs 40 columns, has 39; q quits", m.View())
	m = update(t, m, tea.WindowSizeMsg{Width: 20, Height: 5})
	assert.Equal(t, 1, len(strings.Split(m.View(), "\n")))
	assert.LessOrEqual(t, ansi.StringWidth(m.View()), 20)

	// A short terminal keeps the selected run on screen.
	m = model(t, f, false, 100, 8, nil)
	m = update(t, m, key("down"))
	m = update(t, m, key("down"))
	v = m.View()
	checkFits(t, v, 100, 8)
	assert.Contains(t, v, "> "+crashedID)
}

func TestColourAndNoColour(t *testing.T) {
	f := newFixture(t)
	colour := model(t, f, true, 100, 30, nil).View()
	assert.Contains(t, colour, "\x1b[1mrunr watch\x1b[0m")
	checkFits(t, colour, 100, 30)
	plain := model(t, f, false, 100, 30, nil).View()
	assert.NotContains(t, plain, "\x1b")
	assert.Equal(t, ansi.Strip(colour), plain, "colour changes nothing but the colour")
}

func TestSelectionMovesAndSurvivesARefresh(t *testing.T) {
	f := newFixture(t)
	m := model(t, f, false, 100, 30, nil)
	assert.Equal(t, liveID, m.Selected(), "the first run is selected")
	m = update(t, m, key("j"))
	assert.Equal(t, stoppedID, m.Selected())
	m = update(t, m, key("down"))
	assert.Equal(t, crashedID, m.Selected())
	m = update(t, m, key("down"))
	assert.Equal(t, crashedID, m.Selected(), "the last run stays selected")
	m = update(t, m, key("k"))
	assert.Equal(t, stoppedID, m.Selected())

	// A refresh in another order keeps the selection on the same run.
	runs := f.runs(t)
	m = update(t, m, RunsMsg{Runs: []Run{runs[2], runs[1], runs[0]}})
	assert.Equal(t, stoppedID, m.Selected())
	// The selected run gone: the first one is selected.
	m = update(t, m, RunsMsg{Runs: []Run{runs[0]}})
	assert.Equal(t, liveID, m.Selected())
	// A failed read keeps what was shown.
	m = update(t, m, RunsMsg{Err: errors.New("list runs: permission denied")})
	assert.Contains(t, m.View(), "cannot read the runs: list runs: permission denied")
	assert.Contains(t, m.View(), liveID)
}

func TestStopAsksForConfirmation(t *testing.T) {
	f := newFixture(t)
	var asked []string
	stop := func(id string) (string, error) {
		asked = append(asked, id)
		if err := f.store.RequestStop(id, "runr stop"); err != nil {
			return "", err
		}
		return "Asked run " + id + " (pid 1) to stop after its current tick.", nil
	}
	m := model(t, f, false, 100, 30, stop)

	// s, then anything but y: nothing happens.
	m = update(t, m, key("s"))
	assert.Equal(t, liveID, m.Confirming())
	assert.Contains(t, m.View(), "stop run "+liveID+"? y/n")
	next, cmd := m.Update(key("n"))
	m = next.(Model)
	assert.Nil(t, cmd)
	assert.Empty(t, m.Confirming())
	assert.Contains(t, m.View(), "run "+liveID+" not stopped")
	assert.False(t, f.store.StopRequested(liveID))
	assert.Empty(t, asked)

	// s, y: the stop runs, and says so.
	m = update(t, m, key("s"))
	next, cmd = m.Update(key("y"))
	m = next.(Model)
	require.NotNil(t, cmd)
	msg := cmd()
	assert.Equal(t, []string{liveID}, asked)
	assert.True(t, f.store.StopRequested(liveID), "the stop request is written")
	m = update(t, m, msg)
	assert.Contains(t, m.View(), "Asked run "+liveID+" (pid 1) to stop after its current tick.")

	// A failed stop says why.
	m = update(t, m, StopMsg{ID: liveID, Err: errors.New("permission denied")})
	assert.Contains(t, m.View(), "stop "+liveID+": permission denied")
}

func TestQuitLeavesRunsAlone(t *testing.T) {
	f := newFixture(t)
	m := model(t, f, false, 100, 30, func(string) (string, error) { t.Fatal("q stopped a run"); return "", nil })
	_, cmd := m.Update(key("q"))
	require.NotNil(t, cmd)
	assert.Equal(t, tea.QuitMsg{}, cmd())
	assert.False(t, f.store.StopRequested(liveID))
}

func TestEnterFollowsTheTranscript(t *testing.T) {
	f := newFixture(t)
	m := model(t, f, false, 100, 20, nil)
	next, cmd := m.Update(key("enter"))
	m = next.(Model)
	assert.Equal(t, liveID, m.Following())
	require.NotNil(t, cmd)
	msg := cmd().(FollowMsg)
	assert.False(t, msg.Ended, "the run is live")
	m = update(t, m, msg)
	v := m.View()
	checkFits(t, v, 100, 20)
	assert.Contains(t, v, "run "+liveID+" · transcript · following")
	assert.Contains(t, v, "run started · task --prompt · 3 milestones")
	assert.Contains(t, v, "tick 1 · milestone 1/3 \"write a.txt\" · implement")
	assert.Contains(t, v, `> Edit a_test.go\x1b[2J`)

	// More events come in as the run goes on.
	tl, err := f.store.OpenTimeline(liveID)
	require.NoError(t, err)
	require.NoError(t, tl.Append(5, state.PhaseImplement, state.ActivityEvent{Kind: "tool", Tool: "Bash", Text: "go test ./..."}))
	require.NoError(t, tl.Close())
	m = update(t, m, m.follow.poll()())
	assert.Contains(t, m.View(), "> Bash go test ./...")

	// A message of an earlier follow view is dropped.
	m = update(t, m, FollowMsg{Gen: m.follow.gen - 1, Lines: []string{"stale"}})
	assert.NotContains(t, m.View(), "stale")

	// The run stops: the view says so and keeps the transcript.
	require.NoError(t, f.lock.Release())
	m = update(t, m, m.follow.poll()())
	assert.Contains(t, m.View(), "the run is not live")
	assert.Contains(t, m.View(), "> Bash go test ./...")

	src := m.follow.src
	next, cmd = m.Update(key("esc"))
	m = next.(Model)
	assert.Empty(t, m.Following())
	assert.Contains(t, m.View(), "runr watch")
	require.NotNil(t, cmd, "going back closes the timeline")
	cmd()
	lines, ended, err := src.read()
	assert.Empty(t, lines)
	assert.True(t, ended)
	assert.NoError(t, err)
}

func TestFollowViewKeepsTheTailOnScreen(t *testing.T) {
	f := newFixture(t)
	m := model(t, f, false, 60, 10, nil)
	m = update(t, m, key("enter"))
	var lines []string
	for i := range 50 {
		lines = append(lines, strings.Repeat("x", 100)+" line "+string(rune('a'+i%26)))
	}
	lines = append(lines, "the last line")
	m = update(t, m, FollowMsg{Gen: m.follow.gen, Lines: lines})
	v := m.View()
	checkFits(t, v, 60, 10)
	assert.Contains(t, v, "the last line")
}

func TestFigures(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{0, "0%"}, {0.004, "<1%"}, {0.005, "<1%"}, {0.01, "1%"}, {0.25, "25%"}, {1, "100%"}} {
		assert.Equal(t, c.want, percent(c.f), "%v", c.f)
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {42 * time.Second, "42s"}, {75 * time.Second, "1m15s"}, {30 * time.Minute, "30m"}, {62*time.Minute + 5*time.Second, "1h2m5s"}} {
		assert.Equal(t, c.want, duration(c.d), "%v", c.d)
	}
}
