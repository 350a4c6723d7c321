package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// preflight runs the checks before the first tick: the agent program, the
// dirty tree, the worktree, the claim. A non-nil stop ends the run there.
func (s *Supervisor) preflight(ctx context.Context) *stop {
	if stop := s.checkScopeGlobs(); stop != nil {
		return stop
	}
	if stop := s.prepareAgentOrFallback(ctx); stop != nil {
		return stop
	}
	if _, stop := s.checkFallbacks(); stop != nil {
		return stop
	}
	st := s.st
	base, head, headKnown, sp := s.takeBase(ctx)
	if sp != nil {
		return sp
	}
	// In the tree the review runs in, a worktree's made by takeBase.
	if sp := s.checkReviewProgram(); sp != nil {
		return sp
	}
	// The start's reads of the tree are done: the agent's version is asked
	// for beside the rest of the preflight and the first call.
	s.startAgentVersion(ctx)
	// From here on git is told where the repository is, not left to find
	// it through a .git file the agent can rewrite.
	s.snap.Pin(s.dir)
	// The snapshot is written while the checks below run (the claim's own
	// write among them); the preflight ends when it is on disk.
	saved := make(chan error, 1)
	go func() { saved <- s.saveSnapshot() }()
	waitSaved := sync.OnceValue(func() error { return <-saved })
	defer waitSaved()
	if s.tracker != nil {
		s.tracker.Close()
	}
	s.tracker, s.noTracker = nil, false
	// HEAD, and the fingerprint the first call's is compared with.
	t, err := s.guardTracker()
	if err != nil {
		return internalStop(err)
	}
	// Read side by side with the snapshot, the status's HEAD is the
	// start's, and the first look needs no git process.
	var start guard.Look
	if headKnown {
		start, err = t.StartAt(head)
	} else {
		start, err = t.Start(ctx, base)
	}
	if err != nil {
		return internalStop(err)
	}
	head = start.Head
	st.Baseline, st.GuardHead, st.TreeHash = base, head, start.Fingerprint
	st.StartChanges = nil
	for p := range base {
		st.StartChanges = append(st.StartChanges, p)
	}
	st.StartFiles = s.existingWatchedFiles()
	if stop := s.checkPrograms(); stop != nil {
		return stop
	}
	if stop := s.prepareSandbox(ctx); stop != nil {
		return stop
	}
	if stop := s.claim(ctx); stop != nil {
		return stop
	}
	st.Fingerprint = state.Fingerprint{
		RunrVersion: s.o.Version,
		AgentPath:   s.program,
		GitHead:     head,
		ConfigHash:  s.cfg.Hash(),
	}
	s.takeAgentVersion(false)
	if err := waitSaved(); err != nil {
		return internalStop(err)
	}
	// What the preflight recorded is written with the next write of
	// state.json: the record of a new run's first call, a resumed run's
	// first write in the loop, or the stop's.
	return nil
}

// takeBase takes the run's base before its first tick: in the user's
// checkout, the dirty check and the baseline of its changes, with the
// start's HEAD when the status told it (headKnown); in worktree mode, the
// worktree and its baseline. Either way, the guard snapshot.
func (s *Supervisor) takeBase(ctx context.Context) (base guard.Baseline, head string, headKnown bool, sp *stop) {
	// In the user's checkout, the dirty check's status is the baseline's,
	// and its HEAD the start's.
	var err error
	if !s.st.Flags.Worktree {
		open := s.takeStatus(ctx)
		if open.statusErr != nil {
			return nil, "", false, internalStop(open.statusErr)
		}
		if _, sp = s.dirtyStop(open.status.Changes); sp != nil {
			return nil, "", false, sp
		}
		if base, err = guard.BaselineOf(ctx, s.o.Repo, open.status.Changes); err != nil {
			return nil, "", false, internalStop(err)
		}
		if open = s.takeSnapshot(); open.snapErr != nil {
			return nil, "", false, internalStop(open.snapErr)
		}
		s.snap, head, headKnown = open.snap, open.status.Head, true
	} else {
		if stop := s.ensureWorktree(ctx); stop != nil {
			return nil, "", false, stop
		}
		if base, err = guard.TakeBaseline(ctx, s.dir); err != nil {
			return nil, "", false, internalStop(err)
		}
		if s.snap, err = guard.TakeSnapshot(ctx, s.dir); err != nil {
			return nil, "", false, internalStop(err)
		}
	}
	return base, head, headKnown, nil
}

// checkDirty reads the user's checkout and refuses uncommitted changes
// before the run, unless --allow-dirty; runr's own files (ownFiles: the
// task and config files) do not count. It returns the status (the baseline's) and the changes that
// count.
func (s *Supervisor) checkDirty(ctx context.Context) ([]guard.Change, []string, *stop) {
	changes, err := guard.Changes(ctx, s.o.Repo)
	if err != nil {
		return nil, nil, internalStop(err)
	}
	dirty, sp := s.dirtyStop(changes)
	if sp != nil {
		return nil, dirty, sp
	}
	return changes, dirty, nil
}

// dirtyStop is checkDirty's judgement of the checkout's changes: those
// that count, and the stop they make without --allow-dirty.
func (s *Supervisor) dirtyStop(changes []guard.Change) ([]string, *stop) {
	ignore := s.ownFiles()
	var dirty []string
	for _, p := range guard.Paths(changes) {
		if !slices.Contains(ignore, p) {
			dirty = append(dirty, p)
		}
	}
	if len(dirty) > 0 && !s.st.Flags.AllowDirty {
		return dirty, &stop{Stop: stopreasons.Stop{Code: stopreasons.DirtyWorktree, Condition: "allow_dirty",
			Message: fmt.Sprintf("%s before the run", stopreasons.Plural(len(dirty), "uncommitted change")),
			Details: &stopreasons.StopDetails{Files: dirty}}}
	}
	return dirty, nil
}

// ensureWorktree creates the run's worktree, or takes the one an earlier
// preflight of the run created before it stopped.
func (s *Supervisor) ensureWorktree(ctx context.Context) *stop {
	st := s.st
	if st.Worktree != "" {
		if fi, err := os.Stat(st.Worktree); err == nil && fi.IsDir() {
			s.dir = st.Worktree
			return nil
		}
	}
	wt := filepath.Join(s.store.Home, "worktrees", st.RunID)
	branch := guard.RunBranch(st.RunID)
	if err := guard.AddWorktree(ctx, s.o.Repo, wt, branch); err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: err.Error()}}
	}
	st.Worktree, st.Branch = wt, branch
	s.dir = wt
	s.event(state.WorktreeCreatedEvent{Path: wt, Branch: branch})
	// Recorded at once: a resume after a crash here takes this worktree
	// instead of making its branch again.
	if err := s.save(); err != nil {
		return internalStop(err)
	}
	return nil
}

// checkPrograms refuses, before the first agent call, the programs of the
// run's commands that cannot be found: a custom_script, and the program a
// verify command starts when it is a plain name (a shell construct is left
// to the shell). Found only at verify, it would cost agent calls first.
func (s *Supervisor) checkPrograms() *stop {
	_, sp := s.findPrograms()
	return sp
}

// FoundProgram is a program of the run's commands as found before the run.
type FoundProgram struct {
	Key     string `json:"key"`     // "verify.commands[0]", "custom_script"
	Program string `json:"program"` // as written
	Path    string `json:"path"`    // as found
}

// findPrograms is checkPrograms, returning what it found.
func (s *Supervisor) findPrograms() ([]FoundProgram, *stop) {
	var found []FoundProgram
	r := s.cfg.Stop
	for _, prog := range stopconditions.ScriptPrograms(r.Success, r.Failure, r.Conditions) {
		path, err := lookProgram(prog, s.dir, s.o.Environ)
		if err != nil {
			return found, &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: "custom_script",
				Message: fmt.Sprintf("custom_script %q cannot be run from %s: %v (fix the script path in runr.yaml, or make the file executable)", prog, s.dir, err)}}
		}
		found = append(found, FoundProgram{Key: "custom_script", Program: prog, Path: path})
	}
	for i, cmd := range s.cfg.Verify.Commands {
		prog := proc.CommandProgram(cmd)
		if prog == "" {
			continue
		}
		key := fmt.Sprintf("verify.commands[%d]", i)
		path, err := lookProgram(prog, s.dir, s.o.Environ)
		if err != nil {
			return found, &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: "verify.commands",
				Message: fmt.Sprintf("%s %q: program %q cannot be run from %s: %v (install it, or fix verify.commands in runr.yaml)", key, cmd, prog, s.dir, err),
				Details: &stopreasons.StopDetails{Command: cmd}}}
		}
		found = append(found, FoundProgram{Key: key, Program: prog, Path: path})
	}
	for i, p := range s.cfg.Verify.Coverage.Profiles {
		if err := coverage.CheckPattern(p); err != nil {
			return found, &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: "verify.coverage.profiles",
				Message: fmt.Sprintf("verify.coverage.profiles[%d] %q: %v", i, p, err)}}
		}
	}
	return found, nil
}

// prepareAgent finds the adapter and the agent program, and refuses what
// the agent cannot do: a budget it gives no figures for, claude as root
// without IS_SANDBOX.
func (s *Supervisor) prepareAgent() *stop {
	a, err := agents.Lookup(s.cfg.Agent.Kind)
	if err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.CodeOf(err), Message: err.Error()}}
	}
	s.adapter = a
	b, price := s.st.Budget, s.cfg.Agent.Price
	priced := agents.Priced(price.InputPerMTok, price.OutputPerMTok, s.cfg.Agent.Model)
	if err := agents.BudgetProblem(a, b.MaxCostUSD, b.MaxTokens, priced); err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.CodeOf(err), Message: err.Error()}}
	}
	if w := agents.BudgetWarning(a, b.MaxCostUSD, b.MaxTokens, priced); w != "" {
		s.event(state.BudgetWarningEvent{Message: w})
		if s.log != nil {
			s.log.Warn(w)
		}
	}
	// The program is looked up before what the environment lacks for it
	// (IS_SANDBOX as root): a missing agent is the first thing to fix, and
	// what a fallback agent is for. A budget it cannot measure is the
	// config's fault on any machine, so it comes first.
	prog := a.Program(s.request(""))
	if prog == "" {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.UsageError, Message: "agent.command is empty: give the agent's argv after --, or set agent.command in runr.yaml"}}
	}
	path, err := lookProgram(prog, s.dir, s.o.Environ)
	if err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.WorkerNotFound, Condition: "agent.command",
			Message: fmt.Sprintf("agent program %q not found or not executable: %v", prog, err),
			Details: &stopreasons.StopDetails{Command: prog}}}
	}
	if msg := agents.RootSandboxProblem(s.cfg.Agent.Kind, s.cfg.Agent.PermissionMode, os.Geteuid(), s.o.Environ); msg != "" {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: msg}}
	}
	s.program = path
	return nil
}

// lookProgram finds prog as proc.Run will start it; the error says why
// not in words that follow the program's name.
func lookProgram(prog, dir string, env []string) (string, error) {
	path, err := proc.LookPath(prog, dir, env)
	if nf := (*proc.NotFoundError)(nil); errors.As(err, &nf) {
		return "", errors.New(nf.Reason)
	}
	return path, err
}

// claim records the run's scope claim, refusing to overlap a live run on
// the same checkout unless --force-parallel.
func (s *Supervisor) claim(ctx context.Context) *stop {
	if sp := s.checkCollision(); sp != nil {
		return sp
	}
	st := s.st
	if err := s.store.WriteClaim(state.Claim{RunID: st.RunID, Checkout: s.dir, Allow: s.cfg.Scope.Allow, PID: os.Getpid(), CreatedAt: s.o.Now().UTC()}); err != nil {
		return internalStop(err)
	}
	return nil
}

// checkCollision refuses a scope that overlaps the claim of a live run on
// the same checkout (s.dir), unless --force-parallel. It only reads the
// store.
func (s *Supervisor) checkCollision() *stop {
	st := s.st
	if st.Flags.ForceParallel {
		return nil
	}
	claims, err := s.store.Claims()
	if err != nil {
		return internalStop(err)
	}
	for _, c := range claims {
		if c.RunID == st.RunID || c.Checkout != s.dir {
			continue
		}
		if live, _, _ := s.store.Locked(c.RunID); !live {
			continue // a stale claim of a dead run
		}
		if guard.Overlap(c.Allow, s.cfg.Scope.Allow) {
			scope := c.Allow
			if len(scope) == 0 {
				scope = []string{"the whole checkout"}
			}
			return &stop{Stop: stopreasons.Stop{Code: stopreasons.FileCollision, Condition: "force_parallel",
				Message: fmt.Sprintf("run %s is live on this checkout with an overlapping scope", c.RunID),
				Details: &stopreasons.StopDetails{Other: c.RunID, Files: scope}}}
		}
	}
	return nil
}

func (s *Supervisor) existingWatchedFiles() []string {
	var out []string
	for _, p := range watchedFiles(s.cfg.Stop) {
		if _, err := os.Stat(filepath.Join(s.dir, p)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// checkScopeGlobs refuses, before the first tick, a scope or lockfile glob
// that the guards could not use; found only after the agent's first call, it
// would cost that call.
// checkReviewProgram refuses, before the agent's first call, a review
// command whose program is not there: every milestone would fail its
// review, and the agent's calls be spent for nothing. One that goes
// missing later fails its attempts (DESIGN §2).
func (s *Supervisor) checkReviewProgram() *stop {
	argv := s.cfg.Review.Command
	if len(argv) == 0 {
		return nil
	}
	if _, err := proc.LookPath(argv[0], s.dir, s.childEnv(state.PhaseReview)); err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Condition: "review.command",
			Message: fmt.Sprintf("review.command: %v; install it, or fix review.command in runr.yaml", err)}}
	}
	return nil
}

func (s *Supervisor) checkScopeGlobs() *stop {
	for _, list := range []struct {
		key      string
		patterns []string
	}{{"scope.allow", s.cfg.Scope.Allow}, {"scope.deny", s.cfg.Scope.Deny}, {"scope.protect", s.cfg.Scope.Protect}, {"scope.lockfiles", s.cfg.Scope.Lockfiles}} {
		for i, p := range list.patterns {
			if err := guard.ValidGlob(p); err != nil {
				return &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: list.key,
					Message: fmt.Sprintf("%s[%d]: %v", list.key, i, err)}}
			}
		}
	}
	return nil
}
