package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// childEnv is the environment of every process of the run: runr's own, with
// the run's RUNR_* variables set anew.
func (s *Supervisor) childEnv(phase string) []string {
	st := s.st
	set := map[string]string{
		"RUNR_RUN_ID":    st.RunID,
		"RUNR_RUN_DIR":   s.store.RunDir(st.RunID),
		"RUNR_TICK":      strconv.Itoa(st.Tick),
		"RUNR_ITERATION": strconv.Itoa(st.Iteration),
		"RUNR_PHASE":     phase,
	}
	if one := s.o.Single; one != nil && one.RunID != "" {
		set["RUNR_RUN_ID"], set["RUNR_RUN_DIR"] = one.RunID, one.RunDir
		set["RUNR_WORKER"] = strconv.Itoa(one.Worker)
	}
	if phase == state.PhaseVerify {
		set[coverage.DirVar] = s.coverageDir()
	}
	if st.MilestoneIndex < len(st.Milestones) {
		set["RUNR_MILESTONE"] = strconv.Itoa(st.MilestoneIndex + 1)
		set["RUNR_MILESTONE_GOAL"] = st.Milestones[st.MilestoneIndex].Goal
	}
	env := make([]string, 0, len(s.o.Environ)+len(set))
	for _, kv := range s.o.Environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// runProcess runs one process of the run, recording it in state.json while
// it runs, with the time budget as its deadline.
func (s *Supervisor) runProcess(ctx context.Context, phase string, spec proc.Spec) (proc.Result, error) {
	if !s.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, s.deadline)
		defer cancel()
	}
	if ctx.Err() != nil {
		// A signal or the time budget ended the tick before this process
		// started: it is not started, and the decision names the stop from
		// the signal and the time budget read after it.
		return proc.Result{Canceled: true}, nil
	}
	if err := state.CheckNoSymlink(spec.LogPath); err != nil {
		return proc.Result{}, err
	}
	spec.KillNow = s.killNow
	// Every process of the run (agent, verify, review) writes a log of at
	// most agent.log_cap.
	spec.LogCap = s.cfg.Agent.LogCap
	if spec.KillGrace == 0 {
		spec.KillGrace = s.cfg.Agent.KillGrace
	}
	spec.OnStart = func(p proc.Proc) error {
		s.st.AgentProcess = &state.Process{PID: p.PID, PGID: p.PGID, StartTime: p.StartTime, StartedAt: p.StartedAt.UTC(), Phase: phase, Argv0: spec.Argv[0]}
		started := state.ProcessStartedEvent{PID: p.PID, PGID: p.PGID, Argv0: spec.Argv[0]}
		if phase != state.PhaseImplement {
			// A check's command as configured: an agent's argv may carry the prompt.
			started.Command = commandLine(spec.Argv)
		}
		s.event(started)
		// The process waits at its gate until this returns: unrecorded, a
		// crash would leave it working beside the resume, so it does not
		// run at all when the record cannot be written.
		if err := s.saveProcessStart(); err != nil {
			s.log.Warn("state save at process start failed; the process is not run", zap.Error(err))
			return err
		}
		if one := s.o.Single; one != nil && one.Process != nil {
			p := *s.st.AgentProcess
			one.Process(&p)
		}
		return nil
	}
	res, err := proc.Run(ctx, spec)
	s.st.AgentProcess = nil
	if one := s.o.Single; one != nil && one.Process != nil {
		one.Process(nil)
	}
	if err != nil {
		err = environmentError(err, s.dir)
	}
	if err == nil {
		ended := state.ProcessEndedEvent{ExitCode: res.ExitCode, DurationMS: res.Duration.Milliseconds(), Bytes: res.Bytes,
			LogOmitted: res.LogOmitted, TimedOut: res.TimedOut, Idle: res.Idle, Canceled: res.Canceled}
		if phase == state.PhaseImplement {
			ended.PlainText = agents.EventReader(s.adapter.Kind(), "") == nil
		}
		s.event(ended)
	}
	return res, err
}

// gitContext is the context of runr's own git commands inside a tick: the
// first signal does not cut them short, because a git killed in the middle
// of a commit leaves index.lock behind and the repository unusable until
// someone removes it. They are brief, run no program the repository names
// and start no agent; the loop honours the signal as soon as the tick is
// over. A second SIGINT, the user's "now", still ends them, and so does the
// time budget's deadline: a git stuck past it (a slow disk, a hung network
// file system) is stopped with its group like any process of the run.
func (s *Supervisor) gitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	base := proc.WithKillNow(context.WithoutCancel(ctx), s.killNow)
	stopDeadline := func() {}
	if !s.deadline.IsZero() {
		base, stopDeadline = context.WithDeadline(base, s.deadline)
	}
	gctx, cancelGit := context.WithCancel(guard.WithReadStop(base, ctx))
	cancel := func() { cancelGit(); stopDeadline() }
	go func() {
		select {
		case <-s.killNow:
			cancel()
		case <-gctx.Done():
		}
	}()
	return gctx, cancel
}

// reading reads the signal and the time budget now.
func (s *Supervisor) reading() Reading {
	return Reading{Signal: s.signalled(), DeadlinePassed: !s.deadline.IsZero() && !s.o.Now().Before(s.deadline), Elapsed: s.elapsed()}
}

func (s *Supervisor) relLog(path string) string {
	if rel, err := filepath.Rel(s.store.RunDir(s.st.RunID), path); err == nil {
		return rel
	}
	return path
}

// commandLine is a verify or review process's command as the user wrote
// it: a verify command's sh -c text, a review command's words.
func commandLine(argv []string) string {
	if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

func appendLog(path, text string) {
	f, err := state.OpenAppendNoFollow(path)
	if err != nil {
		return
	}
	f.WriteString(text)
	f.Close()
}

// environmentError marks as environment_invalid the failures that come
// from the machine rather than from runr or the run: a full disk or quota, a
// read-only or failing file system, a working directory that is gone. They
// stop the run with its state.json as last written, resumable once fixed.
func environmentError(err error, dir string) error {
	if stopreasons.CodeOf(err) == stopreasons.EnvironmentInvalid {
		return err
	}
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, errno) {
			return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "%s; free space or fix the file system, then run `runr resume`", errno)
		}
	}
	if dir == "" {
		return err
	}
	if _, serr := os.Stat(dir); serr != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
			"the run's working directory %s is gone; restore it, then run `runr resume`", dir)
	}
	return err
}
