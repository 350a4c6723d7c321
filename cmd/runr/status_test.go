package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// statusStore makes a store of n runs of every kind status lists: completed,
// stopped with milestones approved, running without a live runr (crashed),
// long runs whose milestones have summed-up attempts, runs created in the
// same second, one state.json of an older runr and one that cannot be read.
// It returns the store and the view status must give of each run, in order.
func statusStore(t *testing.T, n int) (*state.Store, []runView) {
	t.Helper()
	store, err := state.Open(t.TempDir())
	require.NoError(t, err)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var want []runView
	for i := range n - 2 {
		// Pairs of runs share their creation second: created_at orders them.
		second := base.Add(time.Duration(i/2) * time.Second)
		id := fmt.Sprintf("%s-%06x", second.Format("20060102T150405Z"), 0xffffff-i)
		st := &state.State{RunID: id, RunStatus: stopreasons.RunStopped, Phase: state.PhaseImplement,
			CreatedAt: second.Add(time.Duration(i%2) * time.Millisecond), Tick: i, ElapsedMS: int64(i) * 1500,
			Counters: state.Counters{Edges: map[string]int{}}}
		ms := 1 + i%5
		approved := 0
		for k := range ms {
			m := state.Milestone{Goal: fmt.Sprintf("milestone %d", k+1), Status: state.MilestonePending}
			if k < i%3 && k < ms {
				m.Status = state.MilestoneApproved
				approved++
			}
			st.Milestones = append(st.Milestones, m)
		}
		v := runView{RunID: id, Tick: i, Approved: approved, Milestones: ms, ElapsedMS: st.ElapsedMS, CreatedAt: st.CreatedAt}
		switch i % 4 {
		case 0:
			st.RunStatus = stopreasons.RunCompleted
			st.StopReason = state.NewStopReason(stopreasons.Complete, approved, "done")
		case 1:
			st.StopReason = state.NewStopReason(stopreasons.VerificationFailed, approved, "failed")
			st.RunStatus = stopreasons.RunStatus(stopreasons.VerificationFailed)
		case 2:
			st.RunStatus = stopreasons.RunRunning
		case 3:
			st.StopReason = state.NewStopReason(stopreasons.MaxTicks, approved, "ticks")
			st.RunStatus = stopreasons.RunStatus(stopreasons.MaxTicks)
			for tick := range 200 {
				st.Milestones[0].Attempts = append(st.Milestones[0].Attempts, state.Attempt{Tick: tick, Outcome: state.OutcomeFailed,
					ErrorSignature: "sig", Error: strings.Repeat("x", 100)})
			}
		}
		v.Status = st.RunStatus
		if st.RunStatus == stopreasons.RunRunning {
			v.Status = stopreasons.RunCrashed
		}
		if st.StopReason != nil {
			v.Reason = string(st.StopReason.Code)
			code := stopreasons.ExitCode(st.StopReason.Code)
			v.ExitCode = &code
		}
		require.NoError(t, store.CreateRun(st, nil))
		want = append(want, v)
	}

	// A state.json written by an older runr: fields in the old order, the
	// task inline, statistics that lag behind the milestones.
	oldID := base.Add(time.Hour).Format("20060102T150405Z") + "-0000aa"
	old := fmt.Sprintf(`{"schema_version":1,"run_id":%q,"run_status":"stopped","phase":"implement","repo":"/r",
"task":{"prompt":"- [ ] a\n- [ ] b\n"},"created_at":"2026-01-02T04:04:05Z","elapsed_ms":61000,"tick":7,
"milestones":[{"goal":"a","status":"approved","attempts":[]},{"goal":"b","status":"in_progress","attempts":[]}],
"statistics":{"total_milestones":2,"approved":0},"stop_reason":"user_stopped"}`, oldID)
	require.NoError(t, os.MkdirAll(store.RunDir(oldID), 0o755))
	require.NoError(t, os.WriteFile(store.StatePath(oldID), []byte(old), 0o644))
	exit := stopreasons.ExitCode(stopreasons.UserStopped)
	want = append(want, runView{RunID: oldID, Status: stopreasons.RunStopped, Reason: string(stopreasons.UserStopped), ExitCode: &exit,
		Tick: 7, Approved: 1, Milestones: 2, ElapsedMS: 61000, CreatedAt: time.Date(2026, 1, 2, 4, 4, 5, 0, time.UTC)})

	badID := base.Add(2*time.Hour).Format("20060102T150405Z") + "-0000bb"
	require.NoError(t, os.MkdirAll(store.RunDir(badID), 0o755))
	require.NoError(t, os.WriteFile(store.StatePath(badID), []byte(`{"run_id": "`+badID+`", "tick": `), 0o644))
	want = append(want, runView{RunID: badID, Status: "unreadable"})
	return store, want
}

// status lists every run of a store of a thousand, each as its state.json
// says, in the order of creation, as a table and as JSON.
func TestStatusListsAThousandRuns(t *testing.T) {
	store, want := statusStore(t, 1000)
	opts := func(asJSON bool) (*StatusOptions, *strings.Builder) {
		io, out, _ := testStreams()
		_ = out
		var b strings.Builder
		io.Out = &b
		return &StatusOptions{IO: io, Store: func() (*state.Store, error) { return store, nil }, JSON: asJSON}, &b
	}

	o, out := opts(true)
	require.NoError(t, statusRun(o))
	var got []runView
	require.NoError(t, json.Unmarshal([]byte(out.String()), &got))
	require.Len(t, got, len(want))
	for i := range want {
		g := got[i]
		if want[i].Status == "unreadable" {
			assert.Equal(t, want[i].RunID, g.RunID)
			assert.Equal(t, "unreadable", g.Status)
			assert.Contains(t, g.Error, "not valid JSON")
			continue
		}
		g.CreatedAt = g.CreatedAt.UTC()
		assert.Equal(t, want[i], g, "run %d", i)
	}

	o, out = opts(false)
	require.NoError(t, statusRun(o))
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, len(want)+1)
	assert.Equal(t, []string{"RUN", "REASON", "EXIT", "TICKS", "MILESTONES", "ELAPSED", "STARTED", "STATUS"}, strings.Fields(lines[0]))
	for i, w := range want {
		f := strings.Fields(lines[i+1])
		require.NotEmpty(t, f)
		assert.Equal(t, w.RunID, f[0], "line %d", i+1)
		assert.Equal(t, w.Status, f[len(f)-1], "line %d", i+1)
		if w.Status == "unreadable" {
			continue
		}
		reason, exit := "-", "-"
		if w.ExitCode != nil {
			reason, exit = w.Reason, fmt.Sprint(*w.ExitCode)
		}
		assert.Equal(t, []string{w.RunID, reason, exit, fmt.Sprint(w.Tick), fmt.Sprintf("%d/%d", w.Approved, w.Milestones),
			stopreasons.Duration(time.Duration(w.ElapsedMS) * time.Millisecond)}, f[:6], "line %d", i+1)
	}
}

// The list reads the head of each state.json only; a long run's file is no
// exception, and its attempts are counted whole in `status <id>`.
func TestStatusOfALongRunCountsEveryAttempt(t *testing.T) {
	store, err := state.Open(t.TempDir())
	require.NoError(t, err)
	st := &state.State{RunID: "20260102T030405Z-00000a", RunStatus: stopreasons.RunStopped, Phase: state.PhaseImplement,
		Counters: state.Counters{Edges: map[string]int{}}, Milestones: []state.Milestone{{Goal: "one", Status: state.MilestoneInProgress}},
		StopReason: state.NewStopReason(stopreasons.MaxTicks, 0, "ticks")}
	for tick := 1; tick <= 120; tick++ {
		st.Milestones[0].Attempts = append(st.Milestones[0].Attempts, state.Attempt{Tick: tick, Outcome: state.OutcomeFailed})
	}
	require.NoError(t, store.CreateRun(st, nil))
	io, _, _ := testStreams()
	var b strings.Builder
	io.Out = &b
	require.NoError(t, statusRun(&StatusOptions{IO: io, Store: func() (*state.Store, error) { return store, nil }, Ref: st.RunID}))
	assert.Contains(t, b.String(), "[in_progress] one (120 attempts)")
	data, err := os.ReadFile(filepath.Join(store.RunDir(st.RunID), "state.json"))
	require.NoError(t, err)
	assert.Equal(t, state.MaxAttempts, strings.Count(string(data), `"outcome"`), "state.json lists the last attempts")
}

// The filters keep the runs a plain filter of the whole list keeps, in the
// same order: --reason by the stop's code, --last the newest of those,
// --active none of a store without a live run (crashed runs are not live).
func TestStatusFilters(t *testing.T) {
	store, all := statusStore(t, 100)
	list := func(o StatusOptions) []runView {
		io, _, _ := testStreams()
		var b strings.Builder
		io.Out = &b
		o.IO, o.Store, o.JSON = io, func() (*state.Store, error) { return store, nil }, true
		require.NoError(t, statusRun(&o))
		var got []runView
		require.NoError(t, json.Unmarshal([]byte(b.String()), &got))
		return got
	}
	ids := func(vs []runView) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.RunID)
		}
		return out
	}
	var failed []runView
	for _, v := range all {
		if v.Reason == string(stopreasons.VerificationFailed) {
			failed = append(failed, v)
		}
	}
	require.Greater(t, len(failed), 5)

	assert.Equal(t, ids(failed), ids(list(StatusOptions{Reason: stopreasons.VerificationFailed})))
	assert.Equal(t, ids(failed[len(failed)-5:]), ids(list(StatusOptions{Reason: stopreasons.VerificationFailed, Last: 5})))
	assert.Equal(t, ids(all[len(all)-3:]), ids(list(StatusOptions{Last: 3})))
	assert.Empty(t, list(StatusOptions{Active: true}))
	assert.Empty(t, list(StatusOptions{Reason: stopreasons.Timeout}))
}

func TestNewCmdStatusParsesFilters(t *testing.T) {
	var got *StatusOptions
	cmd := NewCmdStatus(testFactory(), func(o *StatusOptions) error { got = o; return nil })
	require.NoError(t, execute(t, cmd, "--active", "--last", "4", "--reason", "max_ticks", "--json"))
	assert.True(t, got.Active)
	assert.Equal(t, 4, got.Last)
	assert.Equal(t, stopreasons.MaxTicks, got.Reason)
	assert.True(t, got.JSON)

	for _, args := range [][]string{{"--reason", "max_tick"}, {"--last", "0"}, {"latest", "--last", "2"}} {
		err := execute(t, NewCmdStatus(testFactory(), func(*StatusOptions) error { return nil }), args...)
		assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err), "%v", args)
	}
	err := execute(t, NewCmdStatus(testFactory(), func(*StatusOptions) error { return nil }), "--reason", "max_tick")
	assert.ErrorContains(t, err, "did you mean max_ticks")
}
