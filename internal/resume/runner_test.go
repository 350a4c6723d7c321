package resume

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// waitFixture is a run that stalled (auto-resumable) in a real store, its
// lock held as a Runner holds it, and supervisor options whose Progress
// reports the events of the run on a channel.
type waitFixture struct {
	store  *state.Store
	st     *state.State
	lock   *state.Lock
	cfg    *config.Config
	events chan supervisor.Progress
	sigs   chan os.Signal
}

func newWaitFixture(t *testing.T, backoff time.Duration) *waitFixture {
	t.Helper()
	store, err := state.Open(t.TempDir())
	require.NoError(t, err)
	st := stopped()
	st.Budget.TimeMS = time.Hour.Milliseconds()
	st.StopReason = state.NewStopReason(stopreasons.Stalled, 1, "no output for 1s")
	require.NoError(t, store.Create(st))
	lock, err := store.Acquire(st.RunID)
	require.NoError(t, err)
	t.Cleanup(func() { lock.Release() })
	cfg := defaults(t)
	cfg.Resume.Backoff = []time.Duration{backoff}
	// A continuation stops before its first tick: the agent program is not
	// found (worker_not_found, not auto-resumable), so no process starts.
	cfg.Agent.Kind = "command"
	cfg.Agent.Command = []string{"runr-test-no-such-agent"}
	return &waitFixture{store: store, st: st, lock: lock, cfg: cfg,
		events: make(chan supervisor.Progress, 16), sigs: make(chan os.Signal, 1)}
}

func (f *waitFixture) options(t *testing.T) supervisor.Options {
	return supervisor.Options{
		Config:   f.cfg,
		Store:    f.store,
		Repo:     t.TempDir(),
		Signals:  f.sigs,
		Progress: func(p supervisor.Progress) { f.events <- p },
	}
}

// nextWait waits for the run's next progress message of the wait.
func (f *waitFixture) nextWait(t *testing.T) (supervisor.Progress, supervisor.ProgressWait) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p := <-f.events:
			if w, ok := p.Msg.(supervisor.ProgressWait); ok {
				return p, w
			}
		case <-timeout:
			t.Fatalf("no wait progress message within 30s")
		}
	}
}

type result struct {
	st  *state.State
	err error
}

func (f *waitFixture) autoResume(t *testing.T) <-chan result {
	r := &Runner{Supervisor: f.options(t), Auto: true}
	out := make(chan result, 1)
	go func() {
		st, err := r.autoResume(context.Background(), r.Supervisor, f.lock, f.st)
		out <- result{st, err}
	}()
	return out
}

func timelineTypes(t *testing.T, store *state.Store, id string) []string {
	t.Helper()
	data, err := os.ReadFile(store.RunDir(id) + "/timeline.jsonl")
	require.NoError(t, err)
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		_, rest, ok := strings.Cut(line, `"type":"`)
		require.True(t, ok, "timeline line without a type: %s", line)
		typ, _, _ := strings.Cut(rest, `"`)
		types = append(types, typ)
	}
	return types
}

func TestAutoResumeWaitHoldsTheLockAndEndsOnAStopRequest(t *testing.T) {
	f := newWaitFixture(t, time.Hour)
	done := f.autoResume(t)

	p, w := f.nextWait(t)
	assert.Equal(t, f.st.RunID, p.RunID)
	assert.Contains(t, w.Message, "stalled · attempt 1 of 3")
	assert.WithinDuration(t, time.Now().Add(time.Hour), w.Until, time.Minute)

	_, err := f.store.Acquire(f.st.RunID)
	assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err), "no other runr may take the run during the wait")

	require.NoError(t, f.store.RequestStop(f.st.RunID, "runr stop"))
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a stop request did not end the wait")
	}
	require.NoError(t, res.err)
	assert.Equal(t, stopreasons.UserStopped, res.st.StopReason.Code)
	assert.Equal(t, "runr stop during the auto-resume wait", res.st.StopReason.Message)

	saved, err := f.store.Load(f.st.RunID)
	require.NoError(t, err)
	assert.Equal(t, stopreasons.UserStopped, saved.StopReason.Code, "the stop is in state.json")
	assert.Equal(t, stopreasons.RunStopped, saved.RunStatus)
	assert.Zero(t, saved.AutoResume.Count, "no resume happened")
	assert.False(t, f.store.StopRequested(f.st.RunID), "the request is used up")
	assert.FileExists(t, f.store.RunDir(f.st.RunID)+"/stop.json")
	assert.Equal(t, []string{"auto_resume", "stop"}, timelineTypes(t, f.store, f.st.RunID))

	_, err = f.store.Acquire(f.st.RunID)
	assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err), "the wait leaves the lock to its owner")
}

func TestAutoResumeWaitEndsOnASignal(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		code stopreasons.Code
		msg  string
	}{
		{os.Interrupt, stopreasons.UserStopped, "SIGINT during the auto-resume wait"},
		{syscall.SIGTERM, stopreasons.Terminated, "SIGTERM during the auto-resume wait"},
		{syscall.SIGHUP, stopreasons.Terminated, "SIGHUP during the auto-resume wait"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			f := newWaitFixture(t, time.Hour)
			done := f.autoResume(t)
			f.nextWait(t)
			f.sigs <- tc.sig
			res := <-done
			require.NoError(t, res.err)
			assert.Equal(t, tc.code, res.st.StopReason.Code)
			assert.Equal(t, tc.msg, res.st.StopReason.Message)
			saved, err := f.store.Load(f.st.RunID)
			require.NoError(t, err)
			assert.Equal(t, tc.code, saved.StopReason.Code)
			assert.Zero(t, saved.AutoResume.Count)
		})
	}
}

// After the wait the run continues under the same lock: the continuation
// records its stop while the lock is still held by this process.
func TestAutoResumeContinuesUnderTheSameLock(t *testing.T) {
	f := newWaitFixture(t, 0)
	done := f.autoResume(t)
	f.nextWait(t)
	res := <-done
	require.NoError(t, res.err)
	held, _, err := f.store.Locked(f.st.RunID)
	require.NoError(t, err)
	assert.True(t, held, "the continuation neither took nor released a lock of its own")
	assert.Equal(t, stopreasons.WorkerNotFound, res.st.StopReason.Code, "the continuation's own stop is the last")
	saved, err := f.store.Load(f.st.RunID)
	require.NoError(t, err)
	assert.Equal(t, 1, saved.AutoResume.Count)
	require.Len(t, saved.AutoResume.History, 1)
	assert.Equal(t, stopreasons.Stalled, saved.AutoResume.History[0].Reason)
}

func TestAutoResumeDoesNotWaitAfterAStopItMayNotRetry(t *testing.T) {
	f := newWaitFixture(t, time.Hour)
	f.st.StopReason = state.NewStopReason(stopreasons.Timeout, 1, "out of time")
	res := <-f.autoResume(t)
	require.NoError(t, res.err)
	assert.Same(t, f.st, res.st)
	assert.Empty(t, f.events, "no wait was reported")
	_, err := os.Stat(f.store.RunDir(f.st.RunID) + "/timeline.jsonl")
	assert.True(t, os.IsNotExist(err), "nothing was appended to the timeline")
}

// A stop a signal to this runr caused ends the loop as it is, terminated
// (auto-resumable) included: no wait, no declined auto-resume, nothing
// recorded beyond the stop itself.
func TestAutoResumeEndsOnTheStopOfASignal(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGHUP, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			f := newWaitFixture(t, 0)
			f.st.StopReason = &state.StopReason{Stop: stopreasons.SignalStop(sig)}
			res := <-f.autoResume(t)
			require.NoError(t, res.err)
			assert.Same(t, f.st, res.st)
			assert.Empty(t, f.events, "no wait was reported")
			_, err := os.Stat(f.store.RunDir(f.st.RunID) + "/timeline.jsonl")
			assert.True(t, os.IsNotExist(err), "nothing was appended to the timeline")
		})
	}
}

// Runner.continuePlan owns the plan's lock: it holds it through the run and
// releases it when the run stops for good.
func TestRunnerContinueReleasesThePlansLock(t *testing.T) {
	f := newWaitFixture(t, time.Hour)
	f.lock.Release()
	plan, err := Open(f.store, Request{Ref: f.st.RunID, Config: config.LoadOptions{RepoRoot: t.TempDir()}})
	require.NoError(t, err)
	require.NotNil(t, plan.Lock)
	plan.Config = f.cfg
	r := &Runner{Supervisor: f.options(t), Auto: true}

	st, err := r.continuePlan(context.Background(), plan)
	require.NoError(t, err)
	assert.Equal(t, stopreasons.WorkerNotFound, st.StopReason.Code)
	held, _, err := f.store.Locked(f.st.RunID)
	require.NoError(t, err)
	assert.False(t, held, "the lock is released once the run stopped for good")
	assert.Nil(t, plan.Lock)
}

func TestRunnerContinueRefusesAPlanWithoutItsLock(t *testing.T) {
	f := newWaitFixture(t, time.Hour)
	r := &Runner{Supervisor: f.options(t)}
	_, err := r.continuePlan(context.Background(), &Plan{RunID: f.st.RunID, State: f.st, Config: f.cfg})
	assert.Equal(t, stopreasons.InternalError, stopreasons.CodeOf(err))
}
