package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/task"
)

// Plan is what a new run would do, as far as the checks before its first
// tick tell (DryRun).
type Plan struct {
	Milestones []string // the goals, as parsed from the task
	Agent      PlanAgent
	// Fallback is the chain of agent.fallback after Agent, each as found
	// now; Switched says why the run would start on a fallback agent
	// ("" when it starts on agent.kind).
	Fallback []PlanAgent
	Switched string
	// Dir is where the agent would work: the checkout, or in worktree mode
	// the worktree a run creates (named for the run, so "<run id>" here).
	Dir string
	// Dirty is the uncommitted changes that count for the dirty check
	// (the task and config files do not): allowed with --allow-dirty. At
	// most stopreasons.MaxDetailFiles; DirtyOmitted counts the others.
	Dirty        []string
	DirtyOmitted int
	// Programs is the programs of the verify commands and custom scripts,
	// as found on PATH.
	Programs []FoundProgram
	// Sandbox is what sandbox.mode comes to for the run; nil when the
	// checks stopped before it.
	Sandbox *sandbox.Plan
	// Checks is every check made, in the order a run makes them; the
	// checks after a failed one are not made, as a run stops there.
	Checks []Check
	// Stop is the stop the run would make before its first tick; nil when
	// it would start.
	Stop *stopreasons.Stop
	// Warnings are what would not stop the run but may spoil it (no
	// credential variable set); the caller adds its own.
	Warnings []string
	// Parallel is the layout of a parallel run (parallel.workers > 1);
	// nil for a sequential one.
	Parallel *PlanParallel
}

// PlanParallel is how a parallel run would work (DESIGN §11): its workers'
// worktrees, the groups of milestones, the integration branch.
type PlanParallel struct {
	Workers int `json:"workers"`
	// Groups are the milestones (numbered from 1) of each group, in task
	// order; the milestones of one group may be worked at once.
	Groups [][]int `json:"groups"`
	// Worktrees are the workers' worktrees, Branch the integration branch
	// and Integration its worktree, all named for the run ("<run id>").
	Worktrees       []string `json:"worker_worktrees"`
	Branch          string   `json:"integration_branch"`
	Integration     string   `json:"integration_worktree"`
	MilestoneBranch string   `json:"milestone_branch"` // a milestone's branch, with <N> for its number
	Base            string   `json:"base"`             // the commit the integration branch would start from
	MaxRequeues     int      `json:"max_requeues"`
}

// PlanAgent is the agent a run would call.
type PlanAgent struct {
	Kind    string `json:"kind"`
	Model   string `json:"model,omitempty"`
	Program string `json:"program,omitempty"` // as configured
	Path    string `json:"path,omitempty"`    // as found on PATH
	Version string `json:"version,omitempty"` // its answer to the version query; "" when it gave none
	// Problem is why a fallback agent could not be used now ("" when it
	// can): a run passes over it when it would switch.
	Problem string `json:"problem,omitempty"`
}

// Check is one check of a dry run.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// DryRun makes the checks a new run makes before its first tick (Start's
// preflight: scope globs, the agent with its budget and sandbox checks,
// the dirty tree, the programs of the commands, collisions with live runs),
// in the same order and with the same stops, and creates nothing: no run
// directory, lock, claim or worktree, and the store is only read. The
// agent program is asked for its version, as a run does, and not called.
func DryRun(ctx context.Context, o Options) *Plan {
	parallel := o.Config.Parallel.Workers > 1
	if parallel {
		// A parallel run's workers work in worktrees of their own, as
		// --worktree does: no dirty check, no claim on the checkout.
		o.Flags.Worktree = true
	}
	s := New(o)
	s.dir = o.Repo
	s.st = s.newState("", s.o.Now().UTC())
	p := &Plan{Dir: o.Repo, Agent: PlanAgent{Kind: s.cfg.Agent.Kind}}
	for _, m := range s.st.Milestones {
		p.Milestones = append(p.Milestones, m.Goal)
	}
	if o.Flags.Worktree {
		p.Dir = filepath.Join(s.store.Home, "worktrees", "<run id>")
	}
	var checks []func(context.Context) (string, *stop)
	d := &dryRun{s: s, o: o, p: p}
	if parallel {
		p.Parallel = parallelPlan(s, o)
		// The agents work in the workers' worktrees; the first stands for
		// all of them in what the sandbox would let them write.
		p.Dir = p.Parallel.Worktrees[0]
		checks = append(checks, d.base)
	}
	checks = append(checks, d.scope, d.agent, d.fallbacks, d.tree, d.programs, d.sandbox, d.collisions)
	for _, check := range checks {
		if name, sp := check(ctx); sp != nil {
			p.Checks = append(p.Checks, Check{Name: name, Detail: sp.Message})
			p.Stop = &sp.Stop
			if d := p.Stop.Details; d != nil {
				b := d.Bounded()
				p.Stop.Details = &b
			}
			return p
		}
	}
	return p
}

// parallelPlan is the layout a parallel run of s would have.
func parallelPlan(s *Supervisor, o Options) *PlanParallel {
	const id = "<run id>"
	n := min(s.cfg.Parallel.Workers, state.MaxWorkers)
	pp := &PlanParallel{Workers: n, Branch: guard.RunBranch(id), Integration: s.store.IntegrationWorktree(id),
		MilestoneBranch: guard.MilestoneBranch(id, 0), MaxRequeues: s.cfg.Parallel.MaxRequeues}
	pp.MilestoneBranch = strings.TrimSuffix(pp.MilestoneBranch, "0") + "<N>"
	for k := 1; k <= n; k++ {
		pp.Worktrees = append(pp.Worktrees, s.store.WorkerWorktree(id, k))
	}
	for i, g := range task.Groups(o.Prompt) {
		if g >= len(pp.Groups) {
			pp.Groups = append(pp.Groups, nil)
		}
		pp.Groups[g] = append(pp.Groups[g], i+1)
	}
	return pp
}

// dryRun is a DryRun under way: the supervisor that makes the checks, and
// the plan they fill in. Each check records itself when it passes, and
// returns its name with the stop when it fails.
type dryRun struct {
	s *Supervisor
	o Options
	p *Plan
}

func (d *dryRun) ok(name, detail string) {
	d.p.Checks = append(d.p.Checks, Check{Name: name, OK: true, Detail: detail})
}

// base is a parallel run's first step: the integration branch starts from
// the checkout's HEAD, which must exist.
func (d *dryRun) base(ctx context.Context) (string, *stop) {
	head, err := guard.Head(ctx, d.o.Repo)
	if err != nil {
		return "integration branch", internalStop(err)
	}
	if head == "" {
		return "integration branch", &stop{Stop: *NoBaseStop(d.o.Repo)}
	}
	d.p.Parallel.Base = head
	d.ok("integration branch", fmt.Sprintf("%s would start from HEAD %s", d.p.Parallel.Branch, head[:min(12, len(head))]))
	return "", nil
}

// NoBaseStop is the stop of a parallel run in a repository without a
// commit to start its integration branch from.
func NoBaseStop(repo string) *stopreasons.Stop {
	return &stopreasons.Stop{Code: stopreasons.EnvironmentInvalid, Message: fmt.Sprintf("%s has no commit to start the integration branch from: commit once, then run again", repo)}
}

func (d *dryRun) scope(context.Context) (string, *stop) {
	if sp := d.s.checkScopeGlobs(); sp != nil {
		return "scope", sp
	}
	d.ok("scope", "every scope and lockfile glob is valid")
	return "", nil
}

func (d *dryRun) agent(ctx context.Context) (string, *stop) {
	s, p := d.s, d.p
	sp := s.prepareAgentOrFallback(ctx)
	p.Agent.Kind, p.Agent.Model = s.cfg.Agent.Kind, s.cfg.Agent.Model
	if s.adapter != nil {
		p.Agent.Program = s.adapter.Program(s.request(""))
	}
	if sw := s.st.AgentSwitches; len(sw) > 0 {
		p.Switched = sw[len(sw)-1].String()
	}
	if sp != nil {
		return "agent", sp
	}
	p.Agent.Path = s.program
	p.Agent.Version = agentVersion(ctx, s.program, s.adapter.VersionArgs())
	if w := agents.CredentialWarning(s.adapter, s.o.Environ); w != "" {
		p.Warnings = append(p.Warnings, "agent credentials: "+w)
	}
	detail := "found at " + s.program
	if p.Agent.Version != "" {
		detail += ", version " + p.Agent.Version
	}
	if p.Switched != "" {
		detail += "; " + p.Switched
	}
	d.ok("agent", detail)
	return "", nil
}

func (d *dryRun) fallbacks(context.Context) (string, *stop) {
	if len(d.s.cfg.Agent.Fallback) == 0 {
		return "", nil
	}
	chain, sp := d.s.checkFallbacks()
	d.p.Fallback = chain
	if sp != nil {
		return "fallback agents", sp
	}
	usable := 0
	for _, f := range chain {
		if f.Problem == "" {
			usable++
		}
	}
	d.ok("fallback agents", fmt.Sprintf("%d of %d left usable: %s", usable, len(chain), fallbackChain(chain)))
	return "", nil
}

func (d *dryRun) tree(ctx context.Context) (string, *stop) {
	switch {
	case d.p.Parallel != nil:
		d.ok("working tree", "the workers work in new worktrees from the integration branch: uncommitted changes stay out of them")
		return "", nil
	case d.o.Flags.Worktree:
		d.ok("working tree", "the run works in a new worktree from HEAD: uncommitted changes stay out of it")
		return "", nil
	}
	_, dirty, sp := d.s.checkDirty(ctx)
	d.p.Dirty, d.p.DirtyOmitted = stopreasons.FirstFiles(dirty)
	if sp != nil {
		return "working tree", sp
	}
	if len(dirty) == 0 {
		d.ok("working tree", "no uncommitted changes")
	} else {
		d.ok("working tree", fmt.Sprintf("%s, allowed by --allow-dirty", stopreasons.Plural(len(dirty), "uncommitted change")))
	}
	return "", nil
}

func (d *dryRun) programs(context.Context) (string, *stop) {
	found, sp := d.s.findPrograms()
	d.p.Programs = found
	if sp != nil {
		return "programs", sp
	}
	switch len(found) {
	case 0:
		d.ok("programs", "no program to look up (verify commands left to the shell, or none)")
	default:
		d.ok("programs", fmt.Sprintf("%s of the verify commands and scripts found", stopreasons.Plural(len(found), "program")))
	}
	return "", nil
}

func (d *dryRun) sandbox(ctx context.Context) (string, *stop) {
	o, p := d.o, d.p
	// The run's TMPDIR is made when it starts; its name shows where.
	sbx, _, sp := d.s.planSandbox(ctx, filepath.Join(os.TempDir(), "runr-<run id>-*"))
	if o.Flags.Worktree {
		// Planned on the checkout, shown at the worktree a run creates.
		for _, list := range [][]string{sbx.Writable, sbx.ReadOnly} {
			for i, path := range list {
				if rel, err := filepath.Rel(o.Repo, path); err == nil && filepath.IsLocal(rel) || path == o.Repo {
					list[i] = filepath.Join(p.Dir, rel)
				}
			}
		}
	}
	p.Sandbox = &sbx
	if sp != nil {
		return "sandbox", sp
	}
	d.ok("sandbox", sandboxSummary(sbx))
	return "", nil
}

func (d *dryRun) collisions(context.Context) (string, *stop) {
	switch {
	case d.p.Parallel != nil:
		d.ok("collisions", "none possible: the workers have worktrees of their own")
	case d.o.Flags.Worktree:
		d.ok("collisions", "none possible: the run has a worktree of its own")
	case d.o.Flags.ForceParallel:
		d.ok("collisions", "not checked: --force-parallel")
	default:
		if sp := d.s.checkCollision(); sp != nil {
			return "collisions", sp
		}
		d.ok("collisions", "no live run on this checkout claims an overlapping scope")
	}
	return "", nil
}

// sandboxSummary says in a line what a plan gives the agent.
func sandboxSummary(p sandbox.Plan) string {
	switch {
	case p.Mode == sandbox.ModeOff:
		return "off: the agent writes wherever its user may"
	case !p.Confine:
		return fmt.Sprintf("%s: unconfined, the kernel (%s) has no Landlock", p.Mode, p.Kernel)
	case p.Namespace:
		return fmt.Sprintf("%s: Landlock ABI %d, and a private mount namespace with %s read-only", p.Mode, p.ABI, strings.Join(p.ReadOnly, ", "))
	case p.TopLevel:
		return fmt.Sprintf("%s: Landlock ABI %d alone (no namespace): the checkout's existing top-level entries writable, not its root", p.Mode, p.ABI)
	}
	return fmt.Sprintf("%s: Landlock ABI %d (the git directories lie outside the worktree)", p.Mode, p.ABI)
}

// fallbackChain says in a line which fallback agents a run could switch
// to: "codex (gpt-5-codex) at /usr/bin/codex, gemini (not found)".
func fallbackChain(chain []PlanAgent) string {
	if len(chain) == 0 {
		return "none"
	}
	parts := make([]string, len(chain))
	for i, f := range chain {
		parts[i] = f.ref().String()
		if f.Problem != "" {
			parts[i] += " (cannot be used: " + f.Problem + ")"
		} else if f.Path != "" {
			parts[i] += " at " + f.Path
		}
	}
	return strings.Join(parts, ", ")
}
