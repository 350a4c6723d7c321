package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// confinement is the sandbox a run's agent calls get, decided once before
// the first call of each invocation (prepareSandbox).
type confinement struct {
	decision sandbox.Decision
	policy   sandbox.Policy
	wrap     []string // proc.Spec.Wrap of an agent call
	tmp      string   // the run's own TMPDIR, removed when the invocation ends
}

// sandboxHelper is the executable re-run as the sandbox helper: runr.
func (s *Supervisor) sandboxHelper() (string, error) {
	if s.o.SandboxHelper != "" {
		return s.o.SandboxHelper, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("sandbox: find runr's own executable: %w", err)
	}
	return exe, nil
}

// planSandbox decides the confinement of the agent's calls in s.dir (see
// sandbox.MakePlan). tmp is the run's TMPDIR ("" in a dry run, which
// creates nothing).
func (s *Supervisor) planSandbox(ctx context.Context, tmp string) (sandbox.Plan, sandbox.Policy, *stop) {
	in := sandbox.Input{Mode: s.cfg.Sandbox.Mode, WorkTree: s.dir, Worktree: s.st.Worktree != "" || s.o.Flags.Worktree, Repo: s.o.Repo, Home: s.home(),
		Deny: s.cfg.Scope.Deny, Writable: s.cfg.Sandbox.Writable, TempDir: tmp}
	if in.Mode == "" || in.Mode == sandbox.ModeOff {
		return sandbox.Plan{Decision: sandbox.Decision{Mode: sandbox.ModeOff}}, sandbox.Policy{}, nil
	}
	if storeInside(s.store.Home, s.dir) {
		// The sandboxed agent writes the work tree: a store there is its
		// to rewrite (state.json after the stop, the next call's prompt).
		return sandbox.Plan{}, sandbox.Policy{}, &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: "--home",
			Message: fmt.Sprintf("--home (or RUNR_HOME) %s lies inside the work tree %s, which the sandboxed agent may write; with the sandbox on, keep the run store outside it (the default, in the git directory, is)", s.store.Home, s.dir)}}
	}
	helper, err := s.sandboxHelper()
	if err != nil {
		return sandbox.Plan{}, sandbox.Policy{}, internalStop(err)
	}
	in.Helper = helper
	sp := agents.StateDirs(s.cfg.Agent.Kind, s.home(), s.getenv)
	in.State = append(in.State, sp.Dirs...)
	for _, f := range sp.Files {
		in.State = append(in.State, f.Path)
	}
	plan, p, err := sandbox.MakePlan(ctx, in)
	if errors.Is(err, sandbox.ErrStatePath) {
		return plan, p, &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Condition: "sandbox.mode", Message: err.Error()}}
	}
	if err != nil && !errors.Is(err, sandbox.ErrWritable) {
		return plan, p, internalStop(err)
	}
	if err != nil {
		return plan, p, &stop{Stop: stopreasons.Stop{Code: stopreasons.ConfigInvalid, Condition: "sandbox.writable", Message: err.Error()}}
	}
	if plan.Refusal != "" {
		return plan, p, &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Condition: "sandbox.mode", Message: plan.Refusal}}
	}
	return plan, p, nil
}

// prepareSandbox decides, before the first call of this invocation, how
// the agent is confined; it creates the run's TMPDIR and the agent's
// missing state dirs, records the confinement (a `sandbox` event), and
// hands the warnings to the progress. A refusal stops the run.
func (s *Supervisor) prepareSandbox(ctx context.Context) *stop {
	s.dropSandbox()
	mode := s.cfg.Sandbox.Mode
	if mode == "" || mode == sandbox.ModeOff {
		return nil
	}
	tmp, err := s.sandboxTemp()
	if err != nil {
		return internalStop(err)
	}
	c := &confinement{tmp: tmp}
	s.sandbox = c
	if err := createStatePaths(agents.StateDirs(s.cfg.Agent.Kind, s.home(), s.getenv)); err != nil {
		return &stop{Stop: stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Condition: "sandbox.mode", Message: err.Error()}}
	}
	plan, p, sp := s.planSandbox(ctx, tmp)
	c.decision, c.policy = plan.Decision, p
	s.event(state.SandboxEvent{Mode: plan.Mode, Confined: plan.Confine, ABI: plan.ABI, Kernel: plan.Kernel,
		Namespace: plan.Namespace, NamespaceError: plan.NamespaceError, TopLevelOnly: plan.TopLevel, Writable: plan.Writable, ReadOnly: plan.ReadOnly})
	if sp != nil {
		return sp
	}
	for _, w := range plan.Warnings {
		s.o.Progress(Progress{RunID: s.st.RunID, Msg: ProgressWarning{Message: w}})
	}
	if !plan.Confine {
		return nil
	}
	helper, err := s.sandboxHelper()
	if err != nil {
		return internalStop(err)
	}
	if c.wrap, err = sandbox.Wrap(helper, p); err != nil {
		return internalStop(err)
	}
	return nil
}

// createStatePaths creates the agent CLI's missing state dirs and files,
// which the sandboxed CLI could not create itself.
func createStatePaths(sp agents.StatePaths) error {
	for _, dir := range sp.Dirs {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("sandbox: create the agent's state directory %s: %w", dir, err)
		}
	}
	for _, f := range sp.Files {
		fd, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err == nil {
			_, err = fd.WriteString(f.Initial)
			if cerr := fd.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("sandbox: create the agent's state file %s: %w", f.Path, err)
		}
	}
	return nil
}

// sandboxTemp creates the run's own temporary directory, outside the work
// tree and the repository's .git.
func (s *Supervisor) sandboxTemp() (string, error) {
	base := os.TempDir()
	for _, inside := range []string{s.dir, s.o.Repo} {
		if rel, err := filepath.Rel(inside, base); err == nil && !strings.HasPrefix(rel, "..") {
			base = "/tmp"
		}
	}
	// What a killed invocation of the run left behind goes first.
	for _, d := range runTemps(base, s.st.RunID) {
		_ = os.RemoveAll(d)
	}
	dir, err := os.MkdirTemp(base, "runr-"+s.st.RunID+"-")
	if err != nil {
		return "", fmt.Errorf("sandbox: create the run's temporary directory: %w", err)
	}
	return dir, nil
}

// runTemps lists the temporary directories of run id under base: runr-ID-
// and the digits os.MkdirTemp adds, and nothing else, so that run "a"
// never takes run "a-b"'s directory for its own.
func runTemps(base, id string) []string {
	prefix := "runr-" + id + "-"
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if ok && e.IsDir() && rest != "" && strings.Trim(rest, "0123456789") == "" {
			dirs = append(dirs, filepath.Join(base, e.Name()))
		}
	}
	return dirs
}

// RemoveRunTemps removes the sandbox's temporary directories of run id
// that a killed runr left behind (runr prune, for a run it removes).
func RemoveRunTemps(id string) {
	for _, base := range []string{os.TempDir(), "/tmp"} {
		for _, d := range runTemps(base, id) {
			_ = os.RemoveAll(d)
		}
	}
}

// dropSandbox removes the run's temporary directory.
func (s *Supervisor) dropSandbox() {
	if s.sandbox != nil && s.sandbox.tmp != "" {
		_ = os.RemoveAll(s.sandbox.tmp)
	}
	s.sandbox = nil
}

// confine makes spec an agent call under the run's sandbox: the helper in
// front of the program, its namespace, TMPDIR pointing at the run's own.
func (s *Supervisor) confine(spec *proc.Spec) {
	c := s.sandbox
	if c == nil {
		return
	}
	if c.tmp != "" {
		spec.Env = setEnv(spec.Env, "TMPDIR", c.tmp)
		spec.Env = setEnv(spec.Env, "TMP", c.tmp)
		spec.Env = setEnv(spec.Env, "TEMP", c.tmp)
	}
	if c.wrap == nil {
		return
	}
	spec.Wrap = c.wrap
	spec.Namespaces = c.decision.Namespace
}

// sandboxFailure reports the helper's own failure at call time: its exit
// status and its line on stderr, which no agent call printed.
func (s *Supervisor) sandboxFailure(res proc.Result) (string, bool) {
	if s.sandbox == nil || s.sandbox.wrap == nil || res.ExitCode != sandbox.ExitSetupFailed {
		return "", false
	}
	tail := string(res.Tail)
	i := strings.LastIndex(tail, sandbox.ErrorPrefix)
	if i < 0 {
		return "", false
	}
	line, _, _ := strings.Cut(tail[i:], "\n")
	return line, true
}

func setEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// home is HOME of runr's environment, as the agent sees it.
func (s *Supervisor) home() string { return s.getenv("HOME") }

func (s *Supervisor) getenv(key string) string {
	for i := len(s.o.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(s.o.Environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
