package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// smallState is the bound the tests hold state.json to: a few kilobytes
// whatever the task's size or the run's length.
const smallState = 16 << 10

func boundStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	return s
}

func newState(id string) *State {
	return &State{RunID: id, RunStatus: stopreasons.RunRunning, Phase: PhaseImplement,
		Counters: Counters{Edges: map[string]int{}}}
}

// bigTask is about n bytes of task text: a title and numbered lines.
func bigTask(n int) string {
	var b strings.Builder
	b.WriteString("# A big task\n\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of the task, with words that make it longer\n", i)
	}
	return b.String()
}

// A 10 MB task is kept once, in task.md: state.json stays a few kilobytes
// through creation and saves, and Load gives the whole text back.
func TestTaskTextIsKeptOnceInTaskMD(t *testing.T) {
	s := boundStore(t)
	task := bigTask(10 << 20)
	st := newState("20261121T230017Z-3f9a1c")
	st.Task = Task{File: "TASK.md", Prompt: task}
	st.Milestones = []Milestone{{Goal: "A big task", Status: MilestonePending}}
	require.NoError(t, s.CreateRun(st, map[string]any{"k": 1}))
	for tick := 1; tick <= 3; tick++ {
		st.Tick = tick
		require.NoError(t, s.Save(st))
		fi, err := os.Stat(s.StatePath(st.RunID))
		require.NoError(t, err)
		assert.Less(t, fi.Size(), int64(smallState), "state.json at tick %d", tick)
	}
	onDisk, err := os.ReadFile(filepath.Join(s.RunDir(st.RunID), "task.md"))
	require.NoError(t, err)
	assert.Equal(t, task, string(onDisk))

	raw, err := os.ReadFile(s.StatePath(st.RunID))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"prompt"`)
	var fields struct {
		Task map[string]any `json:"task"`
	}
	require.NoError(t, json.Unmarshal(raw, &fields))
	assert.Equal(t, "TASK.md", fields.Task["file"])
	assert.Equal(t, "task.md", fields.Task["text_file"])
	assert.EqualValues(t, len(task), fields.Task["bytes"])

	got, err := s.Load(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, task, got.Task.Prompt)
	assert.Equal(t, 3, got.Tick)
}

// A task.md that is gone or is not the text the run started with is
// state_corrupt: a resume would work on another task.
func TestTaskTextThatChangedIsRefused(t *testing.T) {
	s := boundStore(t)
	st := newState("20261121T230017Z-3f9a1c")
	st.Task = Task{Prompt: "- [ ] one\n- [ ] two\n"}
	st.Milestones = []Milestone{{Goal: "one", Status: MilestonePending}, {Goal: "two", Status: MilestonePending}}
	require.NoError(t, s.CreateRun(st, nil))
	path := filepath.Join(s.RunDir(st.RunID), "task.md")

	require.NoError(t, os.WriteFile(path, []byte("- [ ] one\n- [ ] three\n"), 0o644))
	_, err := s.Load(st.RunID)
	assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err), "%v", err)
	assert.ErrorContains(t, err, "is not the task run")

	require.NoError(t, os.Remove(path))
	_, err = s.Load(st.RunID)
	assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err), "%v", err)
	assert.ErrorContains(t, err, "task.md")
}

// A checklist item that is one 10 MB line is a milestone whose goal is cut
// to MaxGoalBytes, on a rune boundary, in state.json and in memory alike;
// its whole text stays in task.md.
func TestLongGoalIsCut(t *testing.T) {
	s := boundStore(t)
	long := strings.Repeat("é", 5<<20) // 10 MB of two-byte runes
	st := newState("20261121T230017Z-3f9a1c")
	st.Task = Task{Prompt: "- [ ] " + long + "\n"}
	st.Milestones = []Milestone{{Goal: long, Status: MilestonePending}}
	st.StopReason = NewStopReason(stopreasons.UserStopped, 0, "stopped")
	st.StopReason.Details = &stopreasons.StopDetails{Milestone: 1, MilestoneGoal: long}
	require.NoError(t, s.CreateRun(st, nil))

	for _, got := range []*State{st, mustLoad(t, s, st.RunID)} {
		g := got.Milestones[0]
		assert.True(t, g.GoalCut)
		assert.LessOrEqual(t, len(g.Goal), MaxGoalBytes)
		assert.True(t, strings.HasSuffix(g.Goal, "…"))
		assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(g.Goal, "…")), "the goal is the start of the item, cut between runes")
		assert.LessOrEqual(t, len(got.StopReason.Details.MilestoneGoal), MaxGoalBytes)
		assert.Equal(t, st.Task.Prompt, got.Task.Prompt)
	}
	fi, err := os.Stat(s.StatePath(st.RunID))
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(smallState))
}

func mustLoad(t *testing.T, s *Store, id string) *State {
	t.Helper()
	st, err := s.Load(id)
	require.NoError(t, err)
	return st
}

// A milestone keeps its last MaxAttempts attempts in state.json; the ones
// before are summed up (count, outcomes, ticks, duration, cost), so totals
// and the figures the statistics need stay right, and state.json stays
// small however many ticks the run takes.
func TestAttemptsBeyondTheLastTwentyAreSummedUp(t *testing.T) {
	s := boundStore(t)
	st := newState("20261121T230017Z-3f9a1c")
	st.Milestones = []Milestone{{Goal: "one", Status: MilestoneInProgress}}
	require.NoError(t, s.CreateRun(st, nil))

	outcomes := []string{OutcomeFailed, OutcomeIncomplete, OutcomeRejected, OutcomeStopped, ""}
	want := map[string]int{}
	const total = 1000
	var cost float64
	var duration int64
	for tick := 1; tick <= total; tick++ {
		m := &st.Milestones[0]
		o := outcomes[tick%len(outcomes)]
		if tick == total {
			o = "" // the attempt being worked on
		}
		m.Attempts = append(m.Attempts, Attempt{Tick: tick, Iteration: tick, Outcome: o, DurationMS: 10, CostUSD: 0.25})
		if tick <= total-MaxAttempts {
			if o == "" {
				o = OutcomeStopped // never closed, and long past
			}
			want[o]++
			cost += 0.25
			duration += 10
		}
		st.Tick = tick
		require.NoError(t, s.Save(st))
		assert.LessOrEqual(t, len(st.Milestones[0].Attempts), MaxAttempts, "in memory too, at tick %d", tick)
	}
	fi, err := os.Stat(s.StatePath(st.RunID))
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(smallState), "state.json at tick %d", total)

	got := mustLoad(t, s, st.RunID)
	m := got.Milestones[0]
	require.Len(t, m.Attempts, MaxAttempts)
	assert.Equal(t, total-MaxAttempts+1, m.Attempts[0].Tick, "the last attempts are kept, oldest first")
	assert.Equal(t, total, m.Attempts[MaxAttempts-1].Tick)
	assert.Equal(t, "", m.Attempts[MaxAttempts-1].Outcome, "the open attempt stays open")
	require.NotNil(t, m.Earlier)
	assert.Equal(t, total-MaxAttempts, m.Earlier.Count)
	assert.Equal(t, want, m.Earlier.Outcomes)
	assert.Equal(t, 1, m.Earlier.FirstTick)
	assert.Equal(t, total-MaxAttempts, m.Earlier.LastTick)
	assert.InDelta(t, cost, m.Earlier.CostUSD, 1e-9)
	assert.Equal(t, duration, m.Earlier.DurationMS)
	assert.Equal(t, total, m.AttemptCount())
	assert.True(t, m.Attempted())
	judged := 0
	for tick := 1; tick < total; tick++ {
		if o := outcomes[tick%len(outcomes)]; o == OutcomeFailed || o == OutcomeRejected {
			judged++
		}
	}
	assert.Equal(t, judged, m.JudgedAttempts())
}

// Attempted and JudgedAttempts count the summed-up attempts: a milestone
// whose only finished attempts are no longer listed is still attempted.
func TestMilestoneFiguresCountEarlierAttempts(t *testing.T) {
	for _, c := range []struct {
		name      string
		m         Milestone
		attempted bool
		judged    int
		count     int
	}{
		{"none", Milestone{}, false, 0, 0},
		{"open only", Milestone{Attempts: []Attempt{{Tick: 1}}}, false, 0, 1},
		{"stopped earlier", Milestone{Earlier: &EarlierAttempts{Count: 2, Outcomes: map[string]int{OutcomeStopped: 2}}, Attempts: []Attempt{{Outcome: OutcomeStopped}}}, false, 0, 3},
		{"incomplete earlier", Milestone{Earlier: &EarlierAttempts{Count: 1, Outcomes: map[string]int{OutcomeIncomplete: 1}}, Attempts: []Attempt{{}}}, true, 0, 2},
		{"failed earlier and now", Milestone{Earlier: &EarlierAttempts{Count: 3, Outcomes: map[string]int{OutcomeFailed: 2, OutcomeStopped: 1}}, Attempts: []Attempt{{Outcome: OutcomeRejected}, {Outcome: OutcomeIncomplete}}}, true, 3, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.attempted, c.m.Attempted())
			assert.Equal(t, c.judged, c.m.JudgedAttempts())
			assert.Equal(t, c.count, c.m.AttemptCount())
		})
	}
}

// auto_resume.history keeps its last records; count keeps them all.
func TestAutoResumeHistoryIsBounded(t *testing.T) {
	s := boundStore(t)
	st := newState("20261121T230017Z-3f9a1c")
	st.Milestones = []Milestone{{Goal: "one", Status: MilestonePending}}
	require.NoError(t, s.CreateRun(st, nil))
	at := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	for i := range 50 {
		st.AutoResume.Count++
		st.AutoResume.History = append(st.AutoResume.History, AutoResumeRecord{At: at.Add(time.Duration(i) * time.Minute), Reason: stopreasons.Stalled})
		require.NoError(t, s.Save(st))
	}
	got := mustLoad(t, s, st.RunID)
	assert.Equal(t, 50, got.AutoResume.Count)
	require.Len(t, got.AutoResume.History, MaxAutoResumeHistory)
	assert.Equal(t, at.Add(49*time.Minute), got.AutoResume.History[MaxAutoResumeHistory-1].At)
	assert.Equal(t, at.Add(30*time.Minute), got.AutoResume.History[0].At)
}

// oldState is a state.json as runr wrote it before task.md: the task text
// inline as "prompt", the fields in their old order, every attempt listed.
func oldState(id, prompt string, attempts int) []byte {
	var at []string
	for i := 1; i <= attempts; i++ {
		at = append(at, fmt.Sprintf(`{"tick":%d,"iteration":%d,"outcome":"failed","error_signature":"sig-%d","duration_ms":5,"exit_code":1,"cost_usd":0.5}`, i, i, i%3))
	}
	p, _ := json.Marshal(prompt)
	return fmt.Appendf(nil, `{
  "schema_version": 1,
  "run_id": %q,
  "run_status": "stopped",
  "phase": "implement",
  "repo": "/tmp/repo",
  "task": {"file": "TASK.md", "prompt": %s},
  "created_at": "2026-11-21T23:00:17Z",
  "updated_at": "2026-11-21T23:10:00Z",
  "elapsed_ms": 600000,
  "tick": %d,
  "iteration": %d,
  "budget": {"time_ms": 1800000, "max_ticks": 200},
  "milestones": [
    {"goal": "one", "status": "approved", "attempts": [{"tick":1,"outcome":"approved"}], "retries": 0},
    {"goal": "two", "status": "in_progress", "attempts": [%s], "retries": %d}
  ],
  "milestone_index": 1,
  "counters": {"consecutive_fails": 0, "same_error": 1, "noop": 0, "no_progress": 0, "edges": {}, "attempts": %d},
  "conditions": [],
  "last_progress_tick": 1,
  "usage": {"cost_usd": 1, "input_tokens": 0, "output_tokens": 0},
  "statistics": {"total_milestones": 2, "attempted": 2, "approved": 0},
  "stop_reason": {"code": "user_stopped", "message": "SIGINT"},
  "resumable": true,
  "resume_from": {"milestone": 2, "phase": "implement"},
  "auto_resume": {"count": 0, "history": []},
  "fingerprint": {"runr_version": "0.1.0", "config_hash": "x"},
  "flags": {}
}
`, id, p, attempts+1, attempts+1, strings.Join(at, ","), attempts, attempts+1)
}

// A state.json of an older runr, with the task text inline, loads with its
// text; the first Save moves the text to task.md and drops it from
// state.json, and the run reads back the same.
func TestOldStateWithTheTaskInlineLoads(t *testing.T) {
	s := boundStore(t)
	id := "20261121T230017Z-3f9a1c"
	prompt := "# Old task\n\n- [x] one\n- [ ] two\n"
	require.NoError(t, os.MkdirAll(s.RunDir(id), 0o755))
	require.NoError(t, os.WriteFile(s.StatePath(id), oldState(id, prompt, 30), 0o644))

	st := mustLoad(t, s, id)
	assert.Equal(t, prompt, st.Task.Prompt)
	assert.Equal(t, "TASK.md", st.Task.File)
	assert.Equal(t, "", st.Task.TextFile)
	assert.Equal(t, 1, st.Statistics.Approved, "the figures status reads follow the milestones")
	m := st.Milestones[1]
	assert.Len(t, m.Attempts, MaxAttempts)
	assert.Equal(t, 30, m.AttemptCount())
	sum, err := s.Summary(id)
	require.NoError(t, err)
	assert.Equal(t, Summary{RunID: id, RunStatus: stopreasons.RunStopped, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, ElapsedMS: 600000,
		Tick: 31, Approved: 1, Milestones: 2, Stop: stopreasons.UserStopped, Usage: st.Usage, Scores: Scores(st)}, *sum, "an old file is summed up from its milestones")
	assert.Equal(t, []Score{{Agent: ModelNone, Model: ModelNone, Approved: 1, FirstAttempt: 1, UnapprovedCostUSD: 15}}, sum.Scores,
		"the scores too: milestone 1 approved at once, milestone 2's 30 attempts not")
	assert.NoFileExists(t, filepath.Join(s.RunDir(id), "task.md"), "loading writes nothing")

	require.NoError(t, s.Save(st))
	onDisk, err := os.ReadFile(filepath.Join(s.RunDir(id), "task.md"))
	require.NoError(t, err)
	assert.Equal(t, prompt, string(onDisk))
	raw, err := os.ReadFile(s.StatePath(id))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "Old task")

	again := mustLoad(t, s, id)
	assert.Equal(t, st, again)
}

// Summary gives what Load gives for the fields status lists, reading the
// head of state.json only.
func TestSummaryMatchesLoad(t *testing.T) {
	s := boundStore(t)
	stopped := newState("20261121T230017Z-000001")
	stopped.Tick, stopped.ElapsedMS = 42, 1234
	stopped.RunStatus = stopreasons.RunStopped
	stopped.Milestones = []Milestone{{Goal: "a", Status: MilestoneApproved}, {Goal: "b", Status: MilestoneFailed}, {Goal: "c", Status: MilestonePending}}
	stopped.StopReason = NewStopReason(stopreasons.VerificationFailed, 1, "failed")
	stopped.Usage.AddCall(Call{Agent: "claude", Model: "claude-sonnet-4-5", InputTokens: 10, CacheReadTokens: 100, OutputTokens: 5,
		CostReportedUSD: 0.25, CostEstimatedUSD: 0.2, CostSource: CostReported})
	running := newState("20261121T230017Z-000002")
	running.Usage.AddCall(Call{Agent: "command", InputTokens: 7, OutputTokens: 3, CostSource: CostUnknown})
	running.Milestones = []Milestone{{Goal: "a", Status: MilestoneInProgress}}
	for _, st := range []*State{stopped, running} {
		require.NoError(t, s.CreateRun(st, nil))
		require.NoError(t, s.Save(st))
		sum, err := s.Summary(st.RunID)
		require.NoError(t, err)
		loaded := mustLoad(t, s, st.RunID)
		want := Summary{RunID: loaded.RunID, RunStatus: loaded.RunStatus, CreatedAt: loaded.CreatedAt, UpdatedAt: loaded.UpdatedAt, ElapsedMS: loaded.ElapsedMS,
			Tick: loaded.Tick, Approved: 0, Milestones: len(loaded.Milestones), Usage: loaded.Usage, Scores: loaded.Scores}
		for _, m := range loaded.Milestones {
			if m.Status == MilestoneApproved {
				want.Approved++
			}
		}
		if loaded.StopReason != nil {
			want.Stop = loaded.StopReason.Code
		}
		assert.Equal(t, want, *sum)
		assert.NotEmpty(t, sum.Usage.Models, "the per-model totals are in the summary")
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// Summary stops reading once it has its fields: a state.json with a
// megabyte of milestones after them is read for its first kilobytes only.
func TestSummaryReadsABoundedHead(t *testing.T) {
	st := newState("20261121T230017Z-3f9a1c")
	st.RunStatus = stopreasons.RunStopped
	st.StopReason = NewStopReason(stopreasons.UserStopped, 0, "SIGINT")
	for i := range 8000 {
		st.Milestones = append(st.Milestones, Milestone{Goal: fmt.Sprintf("milestone %d with a goal of some length", i), Status: MilestonePending})
	}
	st.Compact()
	data, err := json.MarshalIndent(st, "", "  ")
	require.NoError(t, err)
	require.Greater(t, len(data), 1<<20)
	cr := &countingReader{r: bytes.NewReader(data)}
	sum, err := readSummary(bufioReader(cr), "state.json")
	require.NoError(t, err)
	assert.Equal(t, 8000, sum.Milestones)
	assert.Equal(t, stopreasons.UserStopped, sum.Stop)
	assert.LessOrEqual(t, cr.n, 2*summaryBuffer, "bytes read of %d", len(data))
}

// What Summary cannot take is state_corrupt, as for Load.
func TestSummaryRefusesWhatLoadRefuses(t *testing.T) {
	id := "20261121T230017Z-3f9a1c"
	for _, c := range []struct {
		name, data, want string
	}{
		{"not JSON", `{"run_id": "` + id + `", `, "not valid JSON"},
		{"an array", `[]`, "not a JSON object"},
		{"newer schema", `{"schema_version": 9, "run_id": "` + id + `"}`, "schema_version 9"},
		{"no run id", `{"schema_version": 1, "run_status": "running"}`, "no run_id"},
		{"negative tick", `{"run_id": "` + id + `", "tick": -1}`, "tick -1 is negative"},
		{"unknown status", `{"run_id": "` + id + `", "run_status": "dancing"}`, `run_status "dancing"`},
		{"damaged field", `{"run_id": "` + id + `", "run_status": "stopped", "milestones": [}`, "not valid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readSummary(strings.NewReader(c.data), "state.json")
			assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err), "%v", err)
			assert.ErrorContains(t, err, c.want)
		})
	}
	// A bare-string stop reason of an older file is read as Load reads it.
	sum, err := readSummary(strings.NewReader(`{"run_id": "`+id+`", "run_status": "stopped", "stop_reason": "user_stopped"}`), "state.json")
	require.NoError(t, err)
	assert.Equal(t, stopreasons.UserStopped, sum.Stop)
}

func bufioReader(r io.Reader) io.Reader { return bufio.NewReaderSize(r, summaryBuffer) }

func TestElapsedCountsALiveRunsTimeSinceItsSave(t *testing.T) {
	saved := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := saved.Add(6 * time.Second)
	assert.Equal(t, 10*time.Second, Elapsed(4000, saved, true, time.Time{}, now), "live: the save's time and the time since")
	assert.Equal(t, 4*time.Second, Elapsed(4000, saved, false, time.Time{}, now), "not live: what was recorded")
	assert.Equal(t, 6*time.Second, Elapsed(4000, saved, true, saved.Add(4*time.Second), now),
		"the time before the holder started (a crash, then a resume) does not count")
	assert.Equal(t, 4*time.Second, Elapsed(4000, time.Time{}, true, time.Time{}, now), "no save time: what was recorded")
}
