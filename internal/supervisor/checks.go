package supervisor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
)

// verify runs the verification commands in order, until one ends the step
// (the first failure fails the attempt).
func (s *Supervisor) verify(ctx context.Context) Decision {
	st := s.st
	logPath := s.store.LogPath(st.RunID, st.Tick, state.PhaseVerify)
	f := Facts{Log: s.relLog(logPath)}
	// $RUNR_COVERAGE_DIR exists and is empty for every verify, so a command
	// that writes a profile there works whether or not runr reads it.
	profiles := s.profiles()
	if err := profiles.Clear(); err != nil {
		f.Err = err
		return s.decide(ctx, Verify, f)
	}
	for _, cmd := range s.cfg.Verify.Commands {
		appendLog(logPath, fmt.Sprintf("$ %s\n", cmd))
		res, err := s.runProcess(ctx, state.PhaseVerify, proc.Spec{
			Argv:    []string{"sh", "-c", cmd},
			Dir:     s.dir,
			Env:     s.childEnv(state.PhaseVerify),
			LogPath: logPath,
			Timeout: s.cfg.Verify.Timeout,
		})
		if err != nil {
			f.Err = err
			break
		}
		s.sum.verifyTime += res.Duration
		c := CheckFacts{Command: cmd, Process: res, At: s.reading()}
		f.Checks = append(f.Checks, c)
		if c.Ends() {
			break
		}
	}
	if f.Err == nil && len(f.Checks) > 0 && !f.Checks[len(f.Checks)-1].Ends() {
		f.Tested, f.Err = s.tested(ctx, logPath, f.Checks, profiles)
	}
	if err := forgetProfiles(profiles); err != nil && f.Err == nil {
		f.Err = err
	}
	return s.decide(ctx, Verify, f)
}

// review runs the review command.
func (s *Supervisor) review(ctx context.Context) Decision {
	st := s.st
	logPath := s.store.LogPath(st.RunID, st.Tick, state.PhaseReview)
	argv := s.cfg.Review.Command
	f := Facts{Command: strings.Join(argv, " "), Log: s.relLog(logPath)}
	f.Process, f.Err = s.runProcess(ctx, state.PhaseReview, proc.Spec{Argv: argv, Dir: s.dir, Env: s.childEnv(state.PhaseReview), LogPath: logPath, Timeout: s.cfg.Verify.Timeout})
	f.At = s.reading()
	return s.decide(ctx, Review, f)
}

// checkpoint judges the tree as verify and review left it, then records the
// approved milestone's tree and commits it when asked. Verify runs the
// agent's code (its tests, its build scripts), and a process the agent left
// running goes on writing: what changed since the agent's call is judged
// like the call's own changes, and the commit holds exactly the tree judged.
func (s *Supervisor) checkpoint(ctx context.Context) Decision {
	gctx, cancel := s.gitContext(ctx)
	defer cancel()
	var f Facts
	for try := 1; ; try++ {
		f.Guard = s.lookAt(gctx, s.verifyMayWrite)
		if f.Guard.Err != nil || f.Guard.stops(s.st.Flags.AllowDeps) {
			break
		}
		err := s.commitMilestone(gctx)
		if errors.Is(err, guard.ErrChangedAfterLook) && try < maxCheckpointLooks {
			// Written between the look and the commit: look again.
			continue
		}
		if err != nil {
			f.Err, f.At = err, s.reading()
		}
		break
	}
	return s.decide(ctx, Checkpoint, f)
}

// maxCheckpointLooks bounds the looks of one checkpoint: a tree that keeps
// changing under the guard is not committed.
const maxCheckpointLooks = 3

// verifyMayWrite reports whether verify may write the changed path p
// without it counting as a change of the agent's: such paths are left out
// of the checkpoint's look. Files the repository's ignore rules ignored when
// the run started are already out of every look, and the coverage profiles
// verify writes into the work tree are removed once it ends
// (forgetProfiles), so none is left to look at; nothing else is exempt.
// Whatever verify is allowed to write is named here; a path named here must
// also stay out of the commit (untouchedFiles), which holds only what the
// look judged.
func (s *Supervisor) verifyMayWrite(p string) bool {
	return false
}

// commitMilestone records the milestone's tree, and commits it when
// checkpoint.commit is on (always in worktree mode): exactly the tree the
// last look judged, when the run has a Tracker.
func (s *Supervisor) commitMilestone(ctx context.Context) error {
	st := s.st
	m := s.milestone()
	m.TreeHash = st.TreeHash
	if !s.cfg.Checkpoint.Commit && !st.Flags.Worktree {
		return nil
	}
	msg := fmt.Sprintf("runr %s: milestone %d/%d: %s", st.RunID, st.MilestoneIndex+1, len(st.Milestones), m.Goal)
	exclude, err := s.untouchedFiles(ctx)
	if err != nil {
		return err
	}
	var judged func(string) string
	if t, err := s.guardTracker(); err != nil {
		return err
	} else if t != nil {
		judged = t.Judged(ctx, guard.Baseline(st.Baseline))
	}
	sha, err := guard.CommitJudged(ctx, s.dir, msg, exclude, judged)
	if err != nil {
		return err
	}
	m.Commit = sha
	if sha != "" {
		// What the commit holds was judged just before; later guards
		// judge only commits after it. The baseline stays: the user's
		// files it records were left out of the commit.
		st.GuardHead = sha
		s.event(state.CheckpointCommitEvent{SHA: sha, Milestone: st.MilestoneIndex + 1})
	}
	return nil
}

// untouchedFiles are the user's files a checkpoint commit leaves alone: the
// task and config files, and whatever was dirty before the run (with
// --allow-dirty) that the agent has not changed since.
func (s *Supervisor) untouchedFiles(ctx context.Context) ([]string, error) {
	out := s.ownFiles()
	if len(s.st.Baseline) == 0 {
		return out, nil
	}
	changed, err := guard.ChangedSince(ctx, s.dir, guard.Baseline(s.st.Baseline))
	if err != nil {
		return nil, err
	}
	for p := range s.st.Baseline {
		if !slices.Contains(changed, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ownFiles are the task and config files, runr's input rather than the
// user's changes: the dirty check passes them and a checkpoint commit never
// takes them. A run given its task as text (--prompt) counts the task file
// the config names (the TASK.md runr init wrote beside runr.yaml) as its
// own too.
func (s *Supervisor) ownFiles() []string {
	var out []string
	if s.o.TaskFile != "" {
		out = append(out, s.o.TaskFile)
	} else if f := s.configuredTask(); f != "" {
		out = append(out, f)
	}
	if f := s.configFile(); f != "" {
		out = append(out, f)
	}
	return out
}

// configuredTask is the task file the config names (task:, relative to
// the repository), relative to the repository; "" when it names none or
// one outside.
func (s *Supervisor) configuredTask() string {
	task := s.cfg.Task
	if task == "" {
		return ""
	}
	if !filepath.IsAbs(task) {
		task = filepath.Join(s.o.Repo, task)
	}
	if rel, err := filepath.Rel(s.o.Repo, task); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return ""
}

// configFile is the run's config file relative to the repository; "" when
// there is none or it lies outside.
func (s *Supervisor) configFile() string {
	if s.cfg.File != "" {
		if rel, err := filepath.Rel(s.o.Repo, s.cfg.File); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return ""
}
