package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// These tests drive a Supervisor as runr does: a real git repository, a
// real run store, and an agent that is a real shell script started in its
// own process group. The agent's behaviour per iteration comes from the
// script; the verify and review commands are real shell commands.

// run is one supervised run under test.
type run struct {
	t     *testing.T
	repo  string
	store *state.Store
	bin   string // holds the agent script, outside the repository
	env   []string
	flags state.Flags
	task  string
	over  []config.Override
	sigs  chan os.Signal
}

func newRun(t *testing.T, task string) *run {
	t.Helper()
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	git(t, repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("demo\n"), 0o644))
	git(t, repo, "add", "README.md")
	git(t, repo, "commit", "-q", "-m", "initial")
	store, err := state.Open(filepath.Join(base, "store"))
	require.NoError(t, err)
	r := &run{t: t, repo: repo, store: store, bin: filepath.Join(base, "bin"), task: task,
		env: append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")}
	require.NoError(t, os.MkdirAll(r.bin, 0o755))
	r.set("budget.time", "2m")
	r.set("agent.kill_grace", "1s")
	return r
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func (r *run) set(key string, v any) {
	r.over = append(r.over, config.Override{Key: key, Value: v, Source: key})
}

// agent installs a shell script as the agent.
func (r *run) agent(script string) {
	p := filepath.Join(r.bin, "agent.sh")
	require.NoError(r.t, os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755))
	r.set("agent.kind", "command")
	r.set("agent.command", []string{p})
}

func (r *run) supervisor() *Supervisor {
	cfg, err := config.Load(config.LoadOptions{RepoRoot: r.repo, Environ: r.env, Overrides: r.over})
	require.NoError(r.t, err)
	o := Options{Config: cfg, Store: r.store, Repo: r.repo, Environ: r.env, Version: "test",
		Flags: r.flags, Prompt: r.task, Now: time.Now}
	if r.sigs != nil {
		o.Signals = r.sigs
	}
	return New(o)
}

// released releases the lock the supervisor leaves to its caller.
func released(sup *Supervisor) {
	if l := sup.HeldLock(); l != nil {
		l.Release()
	}
}

func (r *run) start() *state.State {
	r.t.Helper()
	sup := r.supervisor()
	st, err := sup.Start(context.Background())
	released(sup)
	require.NoError(r.t, err)
	require.NotNil(r.t, st.StopReason)
	return st
}

func outcomes(m state.Milestone) []string {
	var out []string
	for _, a := range m.Attempts {
		out = append(out, a.Outcome)
	}
	return out
}

func events(t *testing.T, r *run, id string) []string {
	var types []string
	require.NoError(t, state.ScanTimeline(r.store.TimelinePath(id), func(e state.Event) error {
		types = append(types, e.Type())
		return nil
	}))
	return types
}

func TestRunCompletesMilestonesWithCheckpointCommits(t *testing.T) {
	r := newRun(t, "# Two\n- [ ] first\n- [ ] second\n")
	r.agent(`echo "m$RUNR_MILESTONE" > "out-$RUNR_MILESTONE.txt"; echo working`)
	r.set("verify.commands", []string{`test -f "out-$RUNR_MILESTONE.txt"`})
	r.set("checkpoint.commit", true)
	st := r.start()

	assert.Equal(t, stopreasons.Complete, st.StopReason.Code)
	assert.Equal(t, stopreasons.RunCompleted, st.RunStatus)
	assert.False(t, st.Resumable)
	require.Len(t, st.Milestones, 2)
	for _, m := range st.Milestones {
		assert.Equal(t, state.MilestoneApproved, m.Status)
		assert.Equal(t, []string{state.OutcomeApproved}, outcomes(m))
		assert.NotEmpty(t, m.Commit)
	}
	assert.Equal(t, 2, st.Statistics.Approved)
	log := git(t, r.repo, "log", "--format=%s")
	assert.Contains(t, log, "milestone 2/2: second")
	assert.Contains(t, log, "milestone 1/2: first")
	ev := events(t, r, st.RunID)
	assert.Contains(t, ev, "checkpoint_commit")
	assert.Contains(t, ev, "milestone_approved")
	assert.Equal(t, "stop", ev[len(ev)-1])
	_, err := os.Stat(filepath.Join(r.store.RunDir(st.RunID), "stop.json"))
	assert.NoError(t, err)
}

func TestVerifyFailureIsRetriedWithItsOutputAsFeedback(t *testing.T) {
	r := newRun(t, "Fix it.")
	// The first call writes a wrong answer; the second reads the feedback
	// from its prompt file and writes the right one.
	r.agent(`if [ "$RUNR_ITERATION" = 1 ]; then echo wrong > answer.txt; else cat "$1" > .git/prompt-2; echo right > answer.txt; fi`)
	r.set("agent.command", []string{filepath.Join(r.bin, "agent.sh"), "{prompt_file}"})
	r.set("verify.commands", []string{`grep -q right answer.txt || { echo "answer is wrong"; exit 1; }`})
	st := r.start()

	assert.Equal(t, stopreasons.Complete, st.StopReason.Code)
	m := st.Milestones[0]
	assert.Equal(t, []string{state.OutcomeFailed, state.OutcomeApproved}, outcomes(m))
	assert.NotEmpty(t, m.Attempts[0].ErrorSignature)
	assert.Equal(t, 1, m.Edges[edgeVerify])
	prompt, err := os.ReadFile(filepath.Join(r.repo, ".git", "prompt-2"))
	require.NoError(t, err)
	assert.Contains(t, string(prompt), "answer is wrong")
}

func TestAgentFailuresUseUpTheRetries(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "boom: cannot do it" >&2; exit 3`)
	r.set("verify.commands", []string{"true"})
	r.set("stop.max_milestone_retries", 1)
	r.set("stop.same_error", 0)
	st := r.start()

	assert.Equal(t, stopreasons.WorkerFailed, st.StopReason.Code)
	assert.Equal(t, []string{state.OutcomeFailed, state.OutcomeFailed}, outcomes(st.Milestones[0]))
	require.NotNil(t, st.LastFailure)
	assert.Equal(t, state.PhaseImplement, st.LastFailure.Phase)
	assert.Contains(t, st.LastFailure.Tail, "boom")
	assert.Equal(t, 3, st.LastFailure.ExitCode)
}

func TestSameErrorRepeatedStopsARunStuckOnOneFailure(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`touch "f-$RUNR_ITERATION"`)
	r.set("verify.commands", []string{`echo "FAIL: TestX expected 1"; exit 1`})
	r.set("stop.max_milestone_retries", 0)
	st := r.start()

	assert.Equal(t, stopreasons.SameErrorRepeated, st.StopReason.Code)
	assert.Equal(t, 3, st.Counters.SameError)
}

func TestIncompleteIterationsAreNotFailures(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "still working"`)
	r.set("budget.max_ticks", 3)
	r.set("stop.noop", 0)
	r.set("stop.no_progress", 0)
	st := r.start()

	assert.Equal(t, stopreasons.MaxTicks, st.StopReason.Code)
	assert.Equal(t, []string{state.OutcomeIncomplete, state.OutcomeIncomplete, state.OutcomeIncomplete}, outcomes(st.Milestones[0]))
	assert.Equal(t, 0, st.Milestones[0].Retries)
	assert.Equal(t, 3, st.Iteration)
}

func TestCompletionSignalWithoutVerifyApproves(t *testing.T) {
	r := newRun(t, "- [ ] one\n- [ ] two\n")
	r.agent(`echo "$RUNR_MILESTONE" >> progress.txt; echo "RUNR_STATUS: done"`)
	st := r.start()
	assert.Equal(t, stopreasons.Complete, st.StopReason.Code)
	assert.Equal(t, 2, st.Statistics.Approved)
}

func TestBlockedAgentStops(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "RUNR_STATUS: blocked need the API key"`)
	st := r.start()
	assert.Equal(t, stopreasons.WorkerBlocked, st.StopReason.Code)
	assert.Equal(t, []string{state.OutcomeStopped}, outcomes(st.Milestones[0]))
	assert.True(t, st.Resumable)
	require.NotNil(t, st.ResumeFrom)
	assert.Equal(t, state.PhaseImplement, st.ResumeFrom.Phase)
}

func TestScopeGuardStopsAWriteOutsideTheScope(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`mkdir -p src secrets; echo x > src/a.go; echo y > secrets/key`)
	r.set("scope.deny", []string{"secrets/**"})
	r.set("verify.commands", []string{"true"})
	st := r.start()
	assert.Equal(t, stopreasons.GuardViolation, st.StopReason.Code)
	require.NotNil(t, st.StopReason.Details)
	assert.Equal(t, []string{"secrets/key"}, st.StopReason.Details.Files)
	assert.Equal(t, []string{"scope.deny secrets/**"}, st.StopReason.Details.Rules)
	assert.Contains(t, st.StopReason.Message, "secrets/key")
}

func TestLockfileGuard(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "lock" > go.sum`)
	r.set("verify.commands", []string{"true"})
	st := r.start()
	assert.Equal(t, stopreasons.LockfileViolation, st.StopReason.Code)
	assert.Equal(t, "scope.lockfiles", st.StopReason.Condition)
}

func TestReviewRequestsChangesThenApproves(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "$RUNR_ITERATION" > n.txt`)
	r.set("verify.commands", []string{"true"})
	r.set("review.command", []string{"sh", "-c", `if [ "$(cat n.txt)" = 1 ]; then echo "rename the function"; exit 1; fi; exit 0`})
	st := r.start()
	assert.Equal(t, stopreasons.Complete, st.StopReason.Code)
	m := st.Milestones[0]
	assert.Equal(t, []string{state.OutcomeRejected, state.OutcomeApproved}, outcomes(m))
	assert.Equal(t, 1, m.ReviewRounds)
	assert.Equal(t, 1, m.Edges[edgeReview])
}

// A review that runs past verify.timeout judged nothing: the attempt failed
// and is retried; it is not a request for changes (no review round).
func TestReviewTimeoutIsAFailedAttemptNotChangesRequested(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "$RUNR_ITERATION" > n.txt`)
	r.set("verify.commands", []string{"true"})
	r.set("verify.timeout", "1s")
	r.set("review.command", []string{"sh", "-c", `if [ "$(cat n.txt)" = 1 ]; then exec sleep 30; fi; exit 0`})
	st := r.start()

	assert.Equal(t, stopreasons.Complete, st.StopReason.Code, st.StopReason.Message)
	m := st.Milestones[0]
	assert.Equal(t, []string{state.OutcomeFailed, state.OutcomeApproved}, outcomes(m))
	assert.Equal(t, 0, m.ReviewRounds, "a timed-out review is not a review round")
	assert.Contains(t, m.Attempts[0].Error, "ran past verify.timeout")
	assert.Equal(t, 1, st.Statistics.Attempted)
}

func TestReviewCrashIsAFailedAttempt(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo x >> n.txt`)
	r.set("verify.commands", []string{"true"})
	r.set("stop.max_milestone_retries", 1)
	r.set("review.command", []string{"sh", "-c", `kill -SEGV $$`})
	st := r.start()

	assert.Equal(t, stopreasons.VerificationFailed, st.StopReason.Code)
	m := st.Milestones[0]
	assert.Equal(t, []string{state.OutcomeFailed, state.OutcomeFailed}, outcomes(m))
	assert.Equal(t, 0, m.ReviewRounds)
	assert.Contains(t, m.Attempts[0].Error, "signal")
}

func TestReviewRejectStopsAndResumesAtImplement(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo x >> n.txt`)
	r.set("verify.commands", []string{"true"})
	r.set("review.command", []string{"sh", "-c", "echo no; exit 2"})
	st := r.start()
	assert.Equal(t, stopreasons.ReviewRejected, st.StopReason.Code)
	require.NotNil(t, st.ResumeFrom)
	assert.Equal(t, state.PhaseImplement, st.ResumeFrom.Phase)
	assert.Equal(t, []string{state.OutcomeRejected}, outcomes(st.Milestones[0]))
}

func TestSkipModeGoesOnPastARejectedAndAFailedMilestone(t *testing.T) {
	r := newRun(t, "- [ ] rejected\n- [ ] failing\n- [ ] fine\n")
	r.agent(`echo "$RUNR_MILESTONE" > m.txt; echo "$RUNR_ITERATION" >> log.txt`)
	r.set("verify.commands", []string{`[ "$(cat m.txt)" != 2 ]`})
	r.set("review.command", []string{"sh", "-c", `[ "$(cat m.txt)" = 1 ] && exit 2; exit 0`})
	r.set("stop.on_milestone_failure", "skip")
	r.set("stop.max_milestone_retries", 1)
	r.set("stop.max_consecutive_fails", 0)
	r.set("stop.max_reject_rate", 0)
	r.set("stop.max_retry_rate", 0)
	r.set("stop.same_error", 0)
	st := r.start()

	require.Len(t, st.Milestones, 3)
	assert.Equal(t, state.MilestoneRejected, st.Milestones[0].Status)
	assert.Equal(t, state.MilestoneFailed, st.Milestones[1].Status)
	assert.Equal(t, []string{state.OutcomeFailed, state.OutcomeFailed}, outcomes(st.Milestones[1]))
	assert.Equal(t, state.MilestoneApproved, st.Milestones[2].Status)
	// The run finished with milestones not approved: verification_failed,
	// and a resume goes back to the first of them.
	assert.Equal(t, stopreasons.VerificationFailed, st.StopReason.Code)
	require.NotNil(t, st.ResumeFrom)
	assert.Equal(t, 1, st.ResumeFrom.Milestone)
	assert.Contains(t, events(t, r, st.RunID), "milestone_failed")
}

func TestDirtyTreeIsRefusedBeforeTheFirstTick(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo never > ran.txt`)
	require.NoError(t, os.WriteFile(filepath.Join(r.repo, "README.md"), []byte("changed\n"), 0o644))
	st := r.start()
	assert.Equal(t, stopreasons.DirtyWorktree, st.StopReason.Code)
	assert.Equal(t, 0, st.Tick)
	_, err := os.Stat(filepath.Join(r.repo, "ran.txt"))
	assert.True(t, os.IsNotExist(err), "the agent must not run")

	r.flags.AllowDirty = true
	st = r.start()
	assert.NotEqual(t, stopreasons.DirtyWorktree, st.StopReason.Code)
}

func TestMissingAgentProgramIsWorkerNotFound(t *testing.T) {
	r := newRun(t, "Do it.")
	r.set("agent.kind", "command")
	r.set("agent.command", []string{"runr-no-such-agent"})
	st := r.start()
	assert.Equal(t, stopreasons.WorkerNotFound, st.StopReason.Code)
}

func TestAgentTimeoutAndStall(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		r := newRun(t, "Do it.")
		r.agent(`while :; do echo busy; sleep 0.1; done`)
		r.set("agent.timeout", "1s")
		st := r.start()
		assert.Equal(t, stopreasons.WorkerTimeout, st.StopReason.Code)
		assert.Equal(t, []string{state.OutcomeStopped}, outcomes(st.Milestones[0]))
	})
	t.Run("stalled", func(t *testing.T) {
		r := newRun(t, "Do it.")
		r.agent(`exec sleep 30`)
		r.set("agent.idle_timeout", "1s")
		st := r.start()
		assert.Equal(t, stopreasons.Stalled, st.StopReason.Code)
	})
}

func TestVerifyTimeoutLeavesTheAttemptOpen(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo x > a.txt`)
	r.set("verify.commands", []string{"exec sleep 30"})
	r.set("verify.timeout", "1s")
	st := r.start()
	assert.Equal(t, stopreasons.VerificationTimeout, st.StopReason.Code)
	assert.Equal(t, []string{""}, outcomes(st.Milestones[0]), "a resume verifies the attempt again")
	require.NotNil(t, st.ResumeFrom)
	assert.Equal(t, state.PhaseVerify, st.ResumeFrom.Phase)
}

// SIGINT while the agent runs stops its group and the run with
// user_stopped; a resume of the stopped run completes it.
func TestSignalStopsTheRunAndResumeContinues(t *testing.T) {
	r := newRun(t, "Do it.")
	ready := filepath.Join(r.bin, "ready")
	r.agent(`if [ ! -e "` + ready + `" ]; then echo up > "` + ready + `"; exec sleep 30; fi; echo done > out.txt; echo "RUNR_STATUS: done"`)
	r.sigs = make(chan os.Signal, 2)
	done := make(chan *state.State, 1)
	go func() {
		sup := r.supervisor()
		st, err := sup.Start(context.Background())
		released(sup)
		assert.NoError(t, err)
		done <- st
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the agent never wrote its ready file %s", ready)
		time.Sleep(10 * time.Millisecond)
	}
	r.sigs <- syscall.SIGINT
	st := <-done
	assert.Equal(t, stopreasons.UserStopped, st.StopReason.Code)
	assert.Equal(t, "signal", st.StopReason.Condition)
	assert.Equal(t, []string{state.OutcomeStopped}, outcomes(st.Milestones[0]))

	loaded, err := r.store.Load(st.RunID)
	require.NoError(t, err)
	r.sigs = nil
	sup := r.supervisor()
	st, err = sup.Continue(context.Background(), loaded)
	released(sup)
	require.NoError(t, err)
	assert.Equal(t, stopreasons.Complete, st.StopReason.Code)
	assert.Contains(t, events(t, r, st.RunID), "run_resumed")
}

func TestTimeBudgetRunsOutWhileTheAgentRuns(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`exec sleep 30`)
	r.set("budget.time", "1s")
	st := r.start()
	assert.Equal(t, stopreasons.Timeout, st.StopReason.Code)
	assert.Equal(t, "budget.time", st.StopReason.Condition)
}

func TestWorktreeRunCommitsOnItsBranch(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo hi > wt.txt; echo "RUNR_STATUS: done"`)
	r.flags.Worktree = true
	st := r.start()
	assert.Equal(t, stopreasons.Complete, st.StopReason.Code)
	assert.NotEmpty(t, st.Worktree)
	assert.Equal(t, "runr/"+st.RunID, st.Branch)
	assert.Contains(t, git(t, r.repo, "log", "--format=%s", st.Branch), "milestone 1/1")
	_, err := os.Stat(filepath.Join(r.repo, "wt.txt"))
	assert.True(t, os.IsNotExist(err), "the checkout is untouched")
}

func TestCrashRecoveryStopsTheRecordedGroup(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "RUNR_STATUS: done"`)
	st := r.start()
	// A process of a crashed runr, recorded in state.json and still alive,
	// with the run's id in its environment as runr gives every process.
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "RUNR_RUN_ID="+st.RunID)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	start, err := proc.ProcStartTime(cmd.Process.Pid)
	require.NoError(t, err)
	st.AgentProcess = &state.Process{PID: cmd.Process.Pid, PGID: cmd.Process.Pid, StartTime: start, Phase: state.PhaseImplement}
	sup := r.supervisor()
	stopped, err := sup.RecoverCrash(st)
	released(sup)
	require.NoError(t, err)
	assert.True(t, stopped)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the recorded process group is still alive")
	}
	assert.Nil(t, st.AgentProcess)
	ev := events(t, r, st.RunID)
	assert.Contains(t, ev, "crash_detected")
	assert.Contains(t, ev, "crash_recovered")
}

// A run whose budget is spent stops with timeout even when a stop.failure
// condition is `not custom_script`: the script is not run once the budget
// is gone, and a condition nobody could check does not fire.
func TestSpentBudgetIsTimeoutNotAnUnjudgedCondition(t *testing.T) {
	r := newRun(t, "Do it.")
	r.agent(`echo "RUNR_STATUS: blocked wait"`)
	ran := filepath.Join(r.bin, "script-ran")
	script := filepath.Join(r.bin, "ok.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho ran >> "+ran+"\nexit 0\n"), 0o755))
	r.set("stop.failure", []any{map[string]any{"type": "not", "condition": map[string]any{"type": "custom_script", "script": script}}})
	st := r.start()
	require.Equal(t, stopreasons.WorkerBlocked, st.StopReason.Code, st.StopReason.Message)
	require.NoError(t, os.Remove(ran))

	loaded, err := r.store.Load(st.RunID)
	require.NoError(t, err)
	loaded.Budget.TimeMS = loaded.ElapsedMS // nothing left
	sup := r.supervisor()
	st, err = sup.Continue(context.Background(), loaded)
	released(sup)
	require.NoError(t, err)
	assert.Equal(t, stopreasons.Timeout, st.StopReason.Code, st.StopReason.Message)
	_, err = os.Stat(ran)
	assert.True(t, os.IsNotExist(err), "no script runs once the budget is spent")
}
