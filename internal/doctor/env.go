// Package doctor checks the environment runr works in: `runr doctor`
// without a run id (CheckEnvironment, Verdict). The account of one run,
// `runr doctor <id>`, is its report (internal/report).
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Check is one environment check of `runr doctor` without a run id.
type Check struct {
	Name   string           `json:"name"`
	OK     bool             `json:"ok"`
	Detail string           `json:"detail"`
	Code   stopreasons.Code `json:"code"` // config_invalid for the config check, environment_invalid otherwise
	// Warning marks a passed check whose finding may still spoil a run
	// (no credential variable set); it does not change the verdict.
	Warning bool `json:"warning,omitempty"`
	// Sandbox is the sandbox check's plan for a run in the checkout.
	Sandbox *sandbox.Plan `json:"sandbox,omitempty"`
}

// Names of the checks, in the order CheckEnvironment makes them
// (CheckRunEnv first).
const (
	CheckGit           = "git repository"
	CheckStore         = "run store writable"
	CheckConfig        = "config valid"
	CheckAgent         = "agent program"
	CheckCredentials   = "agent credentials"
	CheckVerify        = "verify programs"
	CheckStaleLocks    = "stale locks"
	CheckDeadClaims    = "dead claims"
	CheckLeftoverTemps = "leftover temp files"
	CheckWorktrees     = "orphan worktrees"
)

// EnvOptions say where to look and carry what only cmd/runr knows (the
// agent adapters are not doctor's to import).
type EnvOptions struct {
	Dir        string // where runr was invoked
	Home       string // run store ("" = default: <git common dir>/runr)
	ConfigFile string
	Environ    []string
	AgentKinds []string // the values agent.kind accepts (config.LoadOptions.AgentKinds)
	// AgentProgram is the agent's program as its adapter names it; for
	// agent.kind command it may be left out and is then agent.command's first
	// word.
	AgentProgram string
	// AgentVersionArgs ask the agent program for its version (none: it is not
	// asked), within VersionTimeout (0: proc.DefaultProbeTimeout).
	AgentVersionArgs []string
	VersionTimeout   time.Duration
	// CredentialEnv names the variables that can hold the agent's
	// credentials; only whether each is set is reported, never its value.
	CredentialEnv []string
	// CredentialWarning says that none of CredentialEnv is set
	// (agents.CredentialWarning); "" when one is.
	CredentialWarning string
	// SandboxHelper is runr's executable, started as the sandbox helper to
	// see whether a user and mount namespace can be set up; "" skips it.
	SandboxHelper string
	// SandboxState are the agent CLI's state dirs and files, which a
	// sandboxed call may write.
	SandboxState []string
	// AgentProblem is a reason the configured agent cannot run that only
	// cmd/runr can tell (running as root without IS_SANDBOX=1, a budget the
	// agent reports no figures for); "" when there is none.
	AgentProblem string
}

// CheckEnvironment checks what a run needs: a git repository, a writable
// run store, a valid config, the agent and verify programs, and the store's
// leftovers from crashed runs. Checks that need something an earlier check
// found missing (the store, the config) are left out rather than reported
// twice.
func CheckEnvironment(ctx context.Context, o EnvOptions) []Check {
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	var checks []Check
	add := func(c Check) {
		if c.Code == "" {
			c.Code = stopreasons.EnvironmentInvalid
		}
		checks = append(checks, c)
	}

	if err := RunEnvProblem(o.Environ); err != nil {
		add(Check{Name: CheckRunEnv, Detail: err.Error()})
	} else {
		add(Check{Name: CheckRunEnv, OK: true})
	}
	root, gitCheck := checkGit(ctx, o.Dir)
	add(gitCheck)

	var store *state.Store
	home := o.Home
	if home == "" && gitCheck.OK {
		if common, err := guard.CommonDir(ctx, o.Dir); err != nil {
			add(Check{Name: CheckStore, Detail: err.Error()})
		} else {
			home = state.DefaultHome(common)
		}
	}
	if home != "" {
		s, err := state.Open(home)
		if err != nil {
			add(Check{Name: CheckStore, Detail: err.Error()})
		} else {
			store = s
			add(Check{Name: CheckStore, OK: true, Detail: s.Home})
		}
	}

	cfg, cfgCheck := checkConfig(root, o)
	add(cfgCheck)

	// Without a config the agent is unknown; an invalid config is one
	// failure, not two.
	if cfg != nil || o.AgentProgram != "" {
		add(checkAgent(ctx, o, cfg, root))
	}
	if len(o.CredentialEnv) > 0 {
		add(checkCredentials(o))
	}
	if cfg != nil {
		add(checkVerify(root, o.Environ, cfg))
	}
	add(checkSandbox(ctx, o, cfg, root))

	if store != nil {
		add(checkStaleLocks(store))
		add(checkDeadClaims(store))
		add(checkLeftoverTemps(store))
		if root != "" {
			add(checkWorktrees(ctx, store, root))
		}
	}
	return checks
}

// Verdict is the exit reason of the environment checks: complete when all
// pass, config_invalid when the config check failed, else environment_invalid.
func Verdict(checks []Check) stopreasons.Code {
	verdict := stopreasons.Complete
	for _, c := range checks {
		if c.OK {
			continue
		}
		if c.Code == stopreasons.ConfigInvalid {
			return stopreasons.ConfigInvalid
		}
		verdict = stopreasons.EnvironmentInvalid
	}
	return verdict
}

func checkGit(ctx context.Context, dir string) (root string, c Check) {
	c.Name = CheckGit
	top, err := guard.TopLevel(ctx, dir)
	if err != nil {
		// guard's errors say what to do: run inside a checkout, install git.
		c.Detail = err.Error()
		return "", c
	}
	c.OK, c.Detail = true, top
	return top, c
}

func checkConfig(root string, o EnvOptions) (*config.Config, Check) {
	c := Check{Name: CheckConfig, Code: stopreasons.ConfigInvalid}
	cfg, err := config.Load(config.LoadOptions{RepoRoot: root, ConfigFile: o.ConfigFile, Environ: o.Environ, AgentKinds: o.AgentKinds})
	if err != nil {
		c.Detail = err.Error()
		return nil, c
	}
	c.OK = true
	c.Detail = "no " + config.FileName + "; defaults and RUNR_* variables"
	if cfg.File != "" {
		c.Detail = cfg.File
	}
	return cfg, c
}

// checkAgent looks the agent program up as the run will (from the
// repository's root, on the run's PATH) and asks it for its version.
func checkAgent(ctx context.Context, o EnvOptions, cfg *config.Config, root string) Check {
	c := Check{Name: CheckAgent}
	program := o.AgentProgram
	if program == "" && cfg != nil && cfg.Agent.Kind == "command" && len(cfg.Agent.Command) > 0 {
		program = cfg.Agent.Command[0]
	}
	if program == "" {
		c.Detail = "no agent configured: set agent.kind (or agent.command) in runr.yaml, or pass --agent"
		return c
	}
	dir := root
	if dir == "" {
		dir = o.Dir
	}
	path, err := proc.LookPath(program, dir, o.Environ)
	if err != nil {
		reason := err.Error()
		var nf *proc.NotFoundError
		if errors.As(err, &nf) {
			reason = nf.Reason
		}
		c.Detail = fmt.Sprintf("%s: %s; install it or fix agent.kind / agent.command", program, reason)
		return c
	}
	if o.AgentProblem != "" {
		c.Detail = path + ": " + o.AgentProblem
		return c
	}
	c.OK, c.Detail = true, path
	if len(o.AgentVersionArgs) > 0 {
		v, err := proc.Probe(ctx, proc.Spec{Argv: append([]string{path}, o.AgentVersionArgs...), Dir: dir, Env: o.Environ, Timeout: o.VersionTimeout})
		if err != nil {
			c.OK = false
			c.Detail = fmt.Sprintf("%s %s failed: %v; check the installation", path, strings.Join(o.AgentVersionArgs, " "), err)
			return c
		}
		if v != "" {
			c.Detail += " (" + v + ")"
		}
	}
	return c
}

// checkCredentials reports which credential variables are set, by name
// only. An agent may be logged in without any of them, so absence is not a
// failure; the line is there for the person reading a worker_auth_failed.
func checkCredentials(o EnvOptions) Check {
	set := map[string]bool{}
	for _, kv := range o.Environ {
		if name, v, ok := strings.Cut(kv, "="); ok && v != "" {
			set[name] = true
		}
	}
	var parts []string
	for _, name := range o.CredentialEnv {
		presence := "absent"
		if set[name] {
			presence = "present"
		}
		parts = append(parts, name+" "+presence)
	}
	c := Check{Name: CheckCredentials, OK: true, Detail: strings.Join(parts, ", ")}
	if o.CredentialWarning != "" {
		c.Warning, c.Detail = true, c.Detail+"; "+o.CredentialWarning
	}
	return c
}

func checkVerify(root string, environ []string, cfg *config.Config) Check {
	c := Check{Name: CheckVerify}
	type use struct{ prog, where string }
	var uses []use
	for _, cmd := range cfg.Verify.Commands {
		uses = append(uses, use{proc.FirstProgram(cmd), fmt.Sprintf("in %q", cmd)})
	}
	if len(cfg.Review.Command) > 0 {
		// review.command is an argv, not a shell line.
		uses = append(uses, use{cfg.Review.Command[0], "review.command"})
	}
	var found, missing []string
	seen := map[string]bool{}
	for _, u := range uses {
		prog := u.prog
		if prog == "" || proc.ShellBuiltin(prog) || seen[prog] {
			continue
		}
		seen[prog] = true
		// Checks run in the repository's root.
		if _, err := proc.LookPath(prog, root, environ); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", prog, u.where))
		} else {
			found = append(found, prog)
		}
	}
	switch {
	case len(missing) > 0:
		c.Detail = "not found: " + strings.Join(missing, ", ") + "; install them or fix verify.commands / review.command"
	case len(found) == 0:
		c.OK, c.Detail = true, "no programs to check"
	default:
		c.OK, c.Detail = true, strings.Join(found, ", ")
	}
	return c
}

func checkStaleLocks(s *state.Store) Check {
	c := Check{Name: CheckStaleLocks}
	ids, err := s.List()
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	var problems []string
	for _, id := range ids {
		st, err := state.LoadFile(s.StatePath(id))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if st.RunStatus != stopreasons.RunRunning {
			continue
		}
		held, _, err := s.Locked(id)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !held {
			problems = append(problems, fmt.Sprintf("run %s says running but no runr process holds it (crashed); continue it with `runr resume %s`", id, id))
		}
	}
	return verdictOf(c, problems, fmt.Sprintf("%s, none stale", stopreasons.Plural(len(ids), "run")))
}

func checkDeadClaims(s *state.Store) Check {
	c := Check{Name: CheckDeadClaims}
	claims, err := s.Claims()
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	var problems []string
	for _, cl := range claims {
		held, _, err := s.Locked(cl.RunID)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !held {
			path := filepath.Join(s.Home, "active", cl.RunID+".json")
			problems = append(problems, fmt.Sprintf("%s: run %s is not live; remove the file", path, cl.RunID))
		}
	}
	return verdictOf(c, problems, fmt.Sprintf("%s, all live", stopreasons.Plural(len(claims), "claim")))
}

func checkLeftoverTemps(s *state.Store) Check {
	c := Check{Name: CheckLeftoverTemps}
	temps, err := s.LeftoverTemps()
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	if len(temps) > 0 {
		c.Detail = fmt.Sprintf("%s from interrupted writes, safe to remove once no runr works on their run: %s",
			stopreasons.Plural(len(temps), "file"), strings.Join(temps, ", "))
		return c
	}
	c.OK, c.Detail = true, "none"
	return c
}

// checkWorktrees finds store worktrees whose run is gone, or that git no
// longer knows as worktrees of this repository.
func checkWorktrees(ctx context.Context, s *state.Store, root string) Check {
	c := Check{Name: CheckWorktrees}
	dir := filepath.Join(s.Home, "worktrees")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.Detail = fmt.Sprintf("list %s: %v", dir, err)
		return c
	}
	if len(entries) == 0 {
		c.OK, c.Detail = true, "none"
		return c
	}
	paths, err := guard.Worktrees(ctx, root)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	registered := map[string]bool{}
	for _, p := range paths {
		registered[canonical(p)] = true
	}
	var problems []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		_, statErr := os.Stat(s.RunDir(e.Name()))
		known := registered[canonical(path)]
		switch {
		case !state.ValidRunID(e.Name()) || errors.Is(statErr, fs.ErrNotExist):
			fix := "remove it"
			if known {
				fix = "remove it with `git worktree remove --force " + stopreasons.ShellQuote(path) + "`"
			}
			problems = append(problems, fmt.Sprintf("%s: no run %s in the store; %s", path, e.Name(), fix))
		case !known:
			problems = append(problems, fmt.Sprintf("%s: not a worktree git knows (`git worktree list`); remove the directory, then `git worktree prune`", path))
		}
	}
	return verdictOf(c, problems, fmt.Sprintf("%s, all belong to runs", stopreasons.Plural(len(entries), "worktree")))
}

func verdictOf(c Check, problems []string, okDetail string) Check {
	if len(problems) == 0 {
		c.OK, c.Detail = true, okDetail
		return c
	}
	c.Detail = strings.Join(problems, "; ")
	return c
}

// canonical resolves symlinks (macOS's /var is /private/var) so paths from
// git and from the store compare equal.
func canonical(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
