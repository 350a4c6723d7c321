package resume

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func defaults(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load(config.LoadOptions{})
	require.NoError(t, err)
	return cfg
}

// stopped is a run of three milestones stopped in milestone 2 after 10
// minutes of a 10-minute budget, with streaks built up.
func stopped() *state.State {
	return &state.State{
		RunID:     "20260101T000000Z-abcdef",
		RunStatus: stopreasons.RunStopped,
		Phase:     state.PhaseVerify,
		ElapsedMS: (10 * time.Minute).Milliseconds(),
		Tick:      12, Iteration: 5,
		Budget:         state.Budget{TimeMS: (10 * time.Minute).Milliseconds(), MaxTicks: 200},
		MilestoneIndex: 1,
		Milestones: []state.Milestone{
			{Goal: "one", Status: state.MilestoneApproved, Retries: 1},
			{Goal: "two", Status: state.MilestoneInProgress, Retries: 3, ReviewRounds: 2,
				Edges:    map[string]int{"verify->implement": 3},
				Attempts: []state.Attempt{{Tick: 11, Outcome: state.OutcomeFailed}, {Tick: 12}}},
			{Goal: "three", Status: state.MilestonePending},
		},
		Counters: state.Counters{SameError: 3, Noop: 1, NoProgress: 2, ConsecutiveFails: 1, TestFailStreak: 3,
			Edges: map[string]int{"verify->implement": 3}, Attempts: 9},
		StopReason: state.NewStopReason(stopreasons.Timeout, 1, "out of time"),
		ResumeFrom: &state.ResumeFrom{Milestone: 2, Phase: state.PhaseImplement},
		Usage:      state.Usage{CostUSD: 1.5},
	}
}

func TestPrepareGrantsAndRefusals(t *testing.T) {
	cfg := defaults(t)
	for _, tc := range []struct {
		name    string
		mod     func(*state.State)
		grant   Grant
		wantErr string // a usage_error containing this
		check   func(t *testing.T, st *state.State)
	}{
		{name: "no time left, nothing granted", wantErr: "runr resume 20260101T000000Z-abcdef --time 30m"},
		{name: "time granted on top of what was used", grant: Grant{Time: 5 * time.Minute},
			check: func(t *testing.T, st *state.State) {
				assert.Equal(t, (15 * time.Minute).Milliseconds(), st.Budget.TimeMS)
			}},
		{name: "an overshoot does not eat the grant", grant: Grant{Time: time.Minute},
			mod: func(st *state.State) { st.ElapsedMS += 30_000 },
			check: func(t *testing.T, st *state.State) {
				assert.Equal(t, st.ElapsedMS+time.Minute.Milliseconds(), st.Budget.TimeMS)
			}},
		{name: "ticks used up", mod: func(st *state.State) { st.Budget.TimeMS = 0; st.Budget.MaxTicks = 12 },
			wantErr: "--max-ticks 200"},
		{name: "ticks granted", grant: Grant{Time: time.Minute, MaxTicks: 10},
			mod:   func(st *state.State) { st.Budget.MaxTicks = 12 },
			check: func(t *testing.T, st *state.State) { assert.Equal(t, 22, st.Budget.MaxTicks) }},
		{name: "iterations used up", grant: Grant{Time: time.Minute},
			mod: func(st *state.State) { st.Budget.MaxIterations = 5 }, wantErr: "--max-iterations 5"},
		{name: "cost used up", grant: Grant{Time: time.Minute},
			mod: func(st *state.State) { st.Budget.MaxCostUSD = 1.5 }, wantErr: "--max-cost 1.5"},
		{name: "cost granted", grant: Grant{Time: time.Minute, MaxCostUSD: 2},
			mod:   func(st *state.State) { st.Budget.MaxCostUSD = 1 },
			check: func(t *testing.T, st *state.State) { assert.InDelta(t, 3.5, st.Budget.MaxCostUSD, 1e-9) }},
		{name: "tokens used up have no flag", grant: Grant{Time: time.Minute},
			mod: func(st *state.State) {
				st.Budget.MaxTokens = 100
				st.Usage.InputTokens = 100
			}, wantErr: "raise budget.max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stopped()
			if tc.mod != nil {
				tc.mod(st)
			}
			p, err := Prepare(st, cfg, Request{Grant: tc.grant}, false)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
				assert.ErrorIs(t, err, ErrSpent)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.NotEmpty(t, p.Granted)
			tc.check(t, st)
		})
	}
}

func TestPrepareTotalBudget(t *testing.T) {
	cfg := defaults(t)
	// stopped() has used its 10m time budget; 12 ticks used of none.
	for _, tc := range []struct {
		name  string
		mod   func(*state.State)
		grant Grant
		spent bool
		check func(t *testing.T, st *state.State)
	}{
		{name: "the same total is spent", grant: Grant{Time: 10 * time.Minute}, spent: true},
		{name: "a larger total continues", grant: Grant{Time: 15 * time.Minute},
			check: func(t *testing.T, st *state.State) {
				assert.Equal(t, (15 * time.Minute).Milliseconds(), st.Budget.TimeMS, "the total, not a grant on top")
			}},
		{name: "ticks: the total is the limit", grant: Grant{Time: time.Hour, MaxTicks: 20},
			mod:   func(st *state.State) { st.Budget.MaxTicks = 12 },
			check: func(t *testing.T, st *state.State) { assert.Equal(t, 20, st.Budget.MaxTicks) }},
		{name: "ticks: a total at the count used is spent", grant: Grant{Time: time.Hour, MaxTicks: 12},
			mod: func(st *state.State) { st.Budget.MaxTicks = 12 }, spent: true},
		{name: "a smaller total than used is spent", grant: Grant{Time: time.Hour, MaxIterations: 1},
			mod: func(st *state.State) { st.Iteration = 3 }, spent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stopped()
			if tc.mod != nil {
				tc.mod(st)
			}
			_, err := Prepare(st, cfg, Request{Grant: tc.grant, Total: true}, false)
			if tc.spent {
				assert.ErrorIs(t, err, ErrSpent)
				return
			}
			require.NoError(t, err)
			tc.check(t, st)
		})
	}
}

func TestPrepareResetsStreaksAndKeepsTotals(t *testing.T) {
	st := stopped()
	p, err := Prepare(st, defaults(t), Request{Grant: Grant{Time: time.Minute}, AllowDeps: true}, false)
	require.NoError(t, err)

	assert.Equal(t, state.ResumeFrom{Milestone: 2, Phase: state.PhaseImplement}, p.From)
	m := st.Milestones[1]
	assert.Zero(t, m.Retries)
	assert.Zero(t, m.ReviewRounds)
	assert.Empty(t, m.Edges)
	assert.Equal(t, 1, st.Milestones[0].Retries, "only the current milestone's retries reset")
	c := st.Counters
	assert.Zero(t, c.SameError)
	assert.Zero(t, c.Noop)
	assert.Zero(t, c.NoProgress)
	assert.Zero(t, c.ConsecutiveFails)
	assert.Zero(t, c.TestFailStreak)
	assert.Empty(t, c.Edges)
	// Totals carry on.
	assert.Equal(t, 9, c.Attempts)
	assert.Equal(t, 12, st.Tick)
	assert.Equal(t, (10 * time.Minute).Milliseconds(), st.ElapsedMS)
	assert.InDelta(t, 1.5, st.Usage.CostUSD, 1e-9)
	assert.Len(t, m.Attempts, 2)

	assert.True(t, st.Flags.AllowDeps)
	assert.Contains(t, p.Resets, "milestone 2 retries 3 → 0")
	assert.Contains(t, p.Resets, "same_error 3 → 0")
	require.NotNil(t, p.Remaining.Time)
	assert.Equal(t, time.Minute, *p.Remaining.Time)
}

func TestPrepareCrashedRun(t *testing.T) {
	st := stopped()
	st.RunStatus = stopreasons.RunRunning
	st.StopReason = nil
	st.AgentProcess = &state.Process{PID: 123, PGID: 123}
	p, err := Prepare(st, defaults(t), Request{Grant: Grant{Time: time.Minute}}, true)
	require.NoError(t, err)
	// A crashed run continues where it was, not where an earlier stop said.
	assert.Equal(t, state.ResumeFrom{Milestone: 2, Phase: state.PhaseVerify}, p.From)
	// The attempt under verification is verified again, so it stays open.
	assert.Equal(t, "", st.Milestones[1].Attempts[1].Outcome)
	assert.Equal(t, state.OutcomeFailed, st.Milestones[1].Attempts[0].Outcome)
	assert.True(t, p.Crashed)
}

func TestPrepareCrashedRunClosesACutAgentCall(t *testing.T) {
	st := stopped()
	st.RunStatus = stopreasons.RunRunning
	st.StopReason = nil
	st.Phase = state.PhaseImplement
	// An attempt of an earlier milestone left open by an older runr is
	// closed too: nothing will judge it.
	st.Milestones[0].Attempts = []state.Attempt{{Tick: 3}}
	p, err := Prepare(st, defaults(t), Request{Grant: Grant{Time: time.Minute}}, true)
	require.NoError(t, err)
	assert.Equal(t, state.ResumeFrom{Milestone: 2, Phase: state.PhaseImplement}, p.From)
	assert.Equal(t, state.OutcomeStopped, st.Milestones[1].Attempts[1].Outcome, "the agent call the crash cut short")
	assert.Equal(t, state.OutcomeStopped, st.Milestones[0].Attempts[0].Outcome)
	assert.Equal(t, state.OutcomeFailed, st.Milestones[1].Attempts[0].Outcome)
}

func TestResumeFromIsClamped(t *testing.T) {
	for _, tc := range []struct {
		name string
		idx  int
		from *state.ResumeFrom
		want state.ResumeFrom
	}{
		{"past the last milestone finalizes", 3, nil, state.ResumeFrom{Milestone: 3, Phase: state.PhaseFinalize}},
		{"a stopped phase restarts implement", 0, &state.ResumeFrom{Milestone: 1, Phase: state.PhaseStopped}, state.ResumeFrom{Milestone: 1, Phase: state.PhaseImplement}},
		{"recorded place wins", 0, &state.ResumeFrom{Milestone: 2, Phase: state.PhaseReview}, state.ResumeFrom{Milestone: 2, Phase: state.PhaseReview}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stopped()
			st.MilestoneIndex = tc.idx
			st.Phase = state.PhaseStopped
			st.ResumeFrom = tc.from
			assert.Equal(t, tc.want, resumeFrom(st, false))
		})
	}
}

func TestFingerprintWarnings(t *testing.T) {
	st := stopped()
	st.Fingerprint = state.Fingerprint{RunrVersion: "v1.0.0", GitHead: "aaaa"}
	st.Milestones[0].Commit = "bbbb"
	assert.Empty(t, fingerprintWarnings(st, Request{RunrVersion: "v1.0.0", GitHead: "aaaa"}))
	assert.Empty(t, fingerprintWarnings(st, Request{RunrVersion: "v1.0.0", GitHead: "bbbb"}), "HEAD moved by the run's own checkpoint")
	w := fingerprintWarnings(st, Request{RunrVersion: "v1.1.0", GitHead: "cccc"})
	require.Len(t, w, 2)
	assert.Contains(t, w[0], "git HEAD moved")
	assert.Contains(t, w[1], "runr v1.0.0")
}

func TestNextWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	policy := config.Resume{MaxAutoResumes: 3, Backoff: []time.Duration{30 * time.Second, 2 * time.Minute}, MaxWait: time.Hour}
	with := func(code stopreasons.Code, details map[string]any) *state.State {
		st := stopped()
		st.StopReason = state.NewStopReason(code, 0, "")
		if at, ok := details["reset_at"].(string); ok {
			st.StopReason.Details = &stopreasons.StopDetails{ResetAt: at}
		}
		return st
	}
	for _, tc := range []struct {
		name   string
		st     *state.State
		done   int
		want   time.Duration
		wantOK bool
	}{
		{"stalled, first", with(stopreasons.Stalled, nil), 0, 30 * time.Second, true},
		{"stalled, second", with(stopreasons.Stalled, nil), 1, 2 * time.Minute, true},
		{"the last backoff repeats", with(stopreasons.WorkerTimeout, nil), 2, 2 * time.Minute, true},
		{"at most max_auto_resumes", with(stopreasons.Stalled, nil), 3, 0, false},
		{"terminated is auto-resumable", with(stopreasons.Terminated, nil), 0, 30 * time.Second, true},
		{"not auto-resumable", with(stopreasons.GuardViolation, nil), 0, 0, false},
		{"complete", with(stopreasons.Complete, nil), 0, 0, false},
		{"rate limit waits for its reset", with(stopreasons.WorkerRateLimited, map[string]any{"reset_at": "2026-01-01T12:10:00Z"}), 0, 10 * time.Minute, true},
		{"a reset in the past waits not at all", with(stopreasons.WorkerRateLimited, map[string]any{"reset_at": "2026-01-01T11:00:00Z"}), 0, 0, true},
		{"a reset beyond max_wait is not waited for", with(stopreasons.WorkerRateLimited, map[string]any{"reset_at": "2026-01-01T20:00:00Z"}), 0, 0, false},
		{"a bad reset time falls back to the backoff", with(stopreasons.WorkerRateLimited, map[string]any{"reset_at": "soon"}), 0, 30 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NextWait(tc.st, policy, tc.done, now)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRecordAuto(t *testing.T) {
	st := stopped()
	st.StopReason = state.NewStopReason(stopreasons.Stalled, 1, "")
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	RecordAuto(st, at, time.Second)
	assert.Equal(t, 1, st.AutoResume.Count)
	assert.Equal(t, []state.AutoResumeRecord{{At: at, Reason: stopreasons.Stalled, WaitMS: 1000}}, st.AutoResume.History)
}

func TestLoadConfigKeepsRecordedSettingsAndSeesChanges(t *testing.T) {
	repo := t.TempDir()
	flagged, err := config.Load(config.LoadOptions{RepoRoot: repo, Overrides: []config.Override{
		{Key: "agent.kind", Value: "command"},
		{Key: "agent.command", Value: []string{"my-agent", "--fast"}},
		{Key: "verify.commands", Value: []string{"go test ./..."}},
	}})
	require.NoError(t, err)
	recorded := roundTrip(t, flagged.Raw)

	cfg, changed, err := LoadConfig(recorded, nil, config.LoadOptions{RepoRoot: repo})
	require.NoError(t, err)
	assert.Empty(t, changed, "settings from flags at the start are no change")
	assert.Equal(t, []string{"my-agent", "--fast"}, cfg.Agent.Command)
	assert.Equal(t, flagged.Hash(), cfg.Hash())

	write := func(yaml string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo, config.FileName), []byte(yaml), 0o644))
	}
	write("budget:\n  time: 2h\nresume:\n  backoff: [1s]\n")
	cfg, changed, err = LoadConfig(recorded, nil, config.LoadOptions{RepoRoot: repo})
	require.NoError(t, err)
	assert.Empty(t, changed, "budget and resume policy are no change")
	assert.Equal(t, []time.Duration{time.Second}, cfg.Resume.Backoff)

	write("stop:\n  noop: 9\nverify:\n  commands: [make check]\n")
	cfg, changed, err = LoadConfig(recorded, nil, config.LoadOptions{RepoRoot: repo})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"stop.noop", "verify.commands"}, changed)
	assert.Equal(t, 9, cfg.Stop.Noop, "the new value is what a forced resume runs with")
	assert.NotEqual(t, flagged.Hash(), cfg.Hash())

	_, _, err = LoadConfig(recorded, nil, config.LoadOptions{RepoRoot: repo, Environ: []string{"RUNR_STOP_NOOP=x"}})
	assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
}

func TestLoadConfigKeepsWhatTheFlagsSetAndSeesEmptyLists(t *testing.T) {
	repo := t.TempDir()
	write := func(yaml string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo, config.FileName), []byte(yaml), 0o644))
	}
	// runr.yaml names an agent, as `runr init` writes it; the run was
	// started with an argv after -- and --verify.
	write("agent:\n  kind: claude\nscope:\n  protect: ['tests/**']\n")
	started := []string{"agent.command", "agent.kind", "verify.commands"}
	flagged, err := config.Load(config.LoadOptions{RepoRoot: repo, Overrides: []config.Override{
		{Key: "agent.kind", Value: "command"},
		{Key: "agent.command", Value: []string{"my-agent"}},
		{Key: "verify.commands", Value: []string{"go test ./..."}},
	}})
	require.NoError(t, err)
	recorded := roundTrip(t, flagged.Raw)

	cfg, changed, err := LoadConfig(recorded, started, config.LoadOptions{RepoRoot: repo})
	require.NoError(t, err)
	assert.Empty(t, changed, "the file says what it said at the start")
	assert.Equal(t, flagged.Hash(), cfg.Hash())

	write("agent:\n  kind: codex\nverify:\n  commands: [make]\nscope:\n  protect: []\n")
	cfg, changed, err = LoadConfig(recorded, started, config.LoadOptions{RepoRoot: repo})
	require.NoError(t, err)
	assert.Equal(t, []string{"scope.protect"}, changed, "what the flags set is the run's; an emptied list is a change")
	assert.Equal(t, "command", cfg.Agent.Kind)
	assert.Equal(t, []string{"my-agent"}, cfg.Agent.Command)
	assert.Equal(t, []string{"go test ./..."}, cfg.Verify.Commands)
	assert.Empty(t, cfg.Scope.Protect, "a forced resume runs with the emptied list")

	_, changed, err = LoadConfig(recorded, started, config.LoadOptions{RepoRoot: repo, Environ: []string{"RUNR_SCOPE_PROTECT=[]"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"scope.protect"}, changed)

	write("")
	cfg, changed, err = LoadConfig(recorded, started, config.LoadOptions{RepoRoot: repo})
	require.NoError(t, err)
	assert.Empty(t, changed, "a key no longer set does not fall back to a default")
	assert.Equal(t, []string{"tests/**"}, cfg.Scope.Protect)
	assert.Equal(t, flagged.Hash(), cfg.Hash())
}

func TestOpen(t *testing.T) {
	store, err := state.Open(t.TempDir())
	require.NoError(t, err)
	repo := t.TempDir()
	st := stopped()
	st.StopReason = state.NewStopReason(stopreasons.Stalled, 1, "")
	cfg := defaults(t)
	st.Fingerprint.ConfigHash = cfg.Hash()
	require.NoError(t, store.Create(st))
	require.NoError(t, store.WriteJSON(st.RunID, "config.json", cfg.Raw))
	req := Request{Ref: state.Latest, Grant: Grant{Time: time.Minute}, Config: config.LoadOptions{RepoRoot: repo}}

	t.Run("a live run is run_locked", func(t *testing.T) {
		l, err := store.Acquire(st.RunID)
		require.NoError(t, err)
		defer l.Release()
		_, err = Open(store, req)
		assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err))
		dry := req
		dry.DryRun = true
		_, err = Open(store, dry)
		assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err))
	})
	t.Run("the plan holds the lock", func(t *testing.T) {
		p, err := Open(store, req)
		require.NoError(t, err)
		require.NotNil(t, p.Lock)
		held, _, err := store.Locked(st.RunID)
		require.NoError(t, err)
		assert.True(t, held)
		p.Release()
		held, _, _ = store.Locked(st.RunID)
		assert.False(t, held)
	})
	t.Run("a changed config needs --force", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(repo, config.FileName), []byte("stop:\n  noop: 9\n"), 0o644))
		defer os.Remove(filepath.Join(repo, config.FileName))
		_, err := Open(store, req)
		assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
		assert.Contains(t, err.Error(), "stop.noop")
		assert.Contains(t, err.Error(), "--force")
		held, _, _ := store.Locked(st.RunID)
		assert.False(t, held, "a refusal releases the lock")
	})
	t.Run("a completed run is not resumed", func(t *testing.T) {
		done := stopped()
		done.RunID = "20260102T000000Z-abcdef"
		done.RunStatus = stopreasons.RunCompleted
		require.NoError(t, store.Create(done))
		p, err := Open(store, Request{Ref: done.RunID})
		require.NoError(t, err)
		assert.True(t, p.Completed)
		assert.Nil(t, p.Lock)
	})
	t.Run("unknown run", func(t *testing.T) {
		_, err := Open(store, Request{Ref: "20270101T000000Z-abcdef"})
		assert.Equal(t, stopreasons.RunNotFound, stopreasons.CodeOf(err))
	})
}

// roundTrip is settings as config.json gives them back.
func roundTrip(t *testing.T, raw map[string]any) map[string]any {
	t.Helper()
	dir := t.TempDir()
	store, err := state.Open(dir)
	require.NoError(t, err)
	st := &state.State{RunID: "20260101T000000Z-000000"}
	require.NoError(t, store.Create(st))
	require.NoError(t, store.WriteJSON(st.RunID, "config.json", raw))
	out, err := RecordedConfig(store.RunDir(st.RunID))
	require.NoError(t, err)
	return out
}
