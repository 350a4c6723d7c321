package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/initcfg"
	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/termtext"
)

// dryRun makes the checks a run makes before its first tick and prints the
// plan, creating nothing (supervisor.DryRun). A check that fails makes it
// exit with the code the run would stop with; its plan says why.
func dryRun(opts *RunOptions, cfg *config.Config, store *state.Store, repo, taskFile, prompt string) error {
	io := opts.IO
	plan := supervisor.DryRun(context.Background(), supervisor.Options{
		Config:   cfg,
		Store:    store,
		Repo:     repo,
		Environ:  io.Environ,
		Version:  opts.Version,
		Flags:    opts.Flags,
		TaskFile: taskFile,
		Prompt:   prompt,
	})
	if w := initcfg.TemplateWarning(prompt); w != "" {
		plan.Warnings = append(plan.Warnings, "task: "+w)
	}
	var err error
	if opts.JSON {
		err = writeJSON(io.Out, dryRunJSON(plan, cfg, opts.Flags, repo, taskFile))
	} else {
		err = printDryRun(io, plan, cfg, opts.Flags, repo, taskFile)
	}
	if err != nil {
		return err
	}
	if plan.Stop != nil {
		return &stopError{code: plan.Stop.Code}
	}
	return nil
}

// dryRunJSON is the plan as one object. Paths are absolute; the settings
// are the resolved config's sections in runr.yaml's shape.
func dryRunJSON(plan *supervisor.Plan, cfg *config.Config, flags state.Flags, repo, taskFile string) map[string]any {
	agent := map[string]any{}
	if a, ok := cfg.Raw["agent"].(map[string]any); ok {
		for k, v := range a {
			agent[k] = v
		}
	}
	agent["kind"] = plan.Agent.Kind
	agent["program"] = plan.Agent.Program
	agent["path"] = plan.Agent.Path
	agent["version"] = plan.Agent.Version
	if plan.Agent.Model != "" {
		agent["model"] = plan.Agent.Model
	}
	if len(plan.Fallback) > 0 {
		agent["fallback_found"] = plan.Fallback
	}
	if plan.Switched != "" {
		agent["switched"] = plan.Switched
	}
	task := ""
	if taskFile != "" {
		task = filepath.Join(repo, taskFile)
	}
	exit := 0
	if plan.Stop != nil {
		exit = stopreasons.ExitCode(plan.Stop.Code)
	}
	out := map[string]any{
		"dry_run":       true,
		"would_start":   plan.Stop == nil,
		"exit_code":     exit,
		"checks":        plan.Checks,
		"warnings":      nonNil(plan.Warnings),
		"repo":          repo,
		"config_file":   absPath(cfg.File),
		"task_file":     task,
		"milestones":    nonNil(plan.Milestones),
		"agent":         agent,
		"dir":           plan.Dir,
		"flags":         flags,
		"dirty":         nonNil(plan.Dirty),
		"dirty_omitted": plan.DirtyOmitted,
		"programs":      plan.Programs,
		"verify":        cfg.Raw["verify"],
		"review":        cfg.Raw["review"],
		"scope":         cfg.Raw["scope"],
		"checkpoint":    map[string]any{"commit": cfg.Checkpoint.Commit || flags.Worktree || plan.Parallel != nil},
		"budget":        cfg.Raw["budget"],
		"stop_rules":    cfg.Raw["stop"],
	}
	if plan.Programs == nil {
		out["programs"] = []supervisor.FoundProgram{}
	}
	if plan.Sandbox != nil {
		out["sandbox"] = plan.Sandbox
	}
	if plan.Parallel != nil {
		out["parallel"] = plan.Parallel
	}
	if plan.Stop != nil {
		out["stop"] = plan.Stop
	}
	return out
}

// printDryRun writes the checks and the plan for a person.
func printDryRun(ios *IOStreams, plan *supervisor.Plan, cfg *config.Config, flags state.Flags, repo, taskFile string) error {
	p := ios.OutPainter()
	w := ios.Out
	fmt.Fprintln(w, p.Bold("Dry run: nothing was created and no agent was called."))
	if err := printChecks(w, p, plan.Checks); err != nil {
		return err
	}
	if len(plan.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, warning := range plan.Warnings {
			fmt.Fprintf(w, "  %s %s\n", p.Yellow("warn"), termtext.VisibleLine(warning))
		}
	}
	fmt.Fprintln(w, "\nPlan:")
	r := planRows{w}
	r.task(plan, cfg, repo, taskFile)
	r.agent(plan, cfg)
	r.workplace(plan, flags)
	r.checks(plan, cfg, flags)
	r.guards(plan, cfg, flags)
	r.limits(cfg)
	printConditions(w, cfg)
	printVerdict(w, p, plan)
	return nil
}

// printChecks lists the preflight's checks, in a run's order.
func printChecks(w io.Writer, p Painter, checks []supervisor.Check) error {
	fmt.Fprintln(w, "\nChecks, in a run's order:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		mark := p.Green("ok")
		if !c.OK {
			mark = p.Red("FAIL")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", mark, c.Name, termtext.VisibleLine(c.Detail))
	}
	return tw.Flush()
}

// planRows writes the plan's rows: a key in a column of its own, "" to go
// on with the row above.
type planRows struct{ w io.Writer }

func (r planRows) row(key, format string, args ...any) {
	fmt.Fprintf(r.w, "  %-11s %s\n", key, fmt.Sprintf(format, args...))
}

// task writes where the config and the task come from, and the milestones.
func (r planRows) task(plan *supervisor.Plan, cfg *config.Config, repo, taskFile string) {
	if cfg.File != "" {
		r.row("config", "%s", shownPath(cfg.File))
	} else {
		r.row("config", "no runr.yaml: defaults, RUNR_* variables and flags")
	}
	if taskFile != "" {
		r.row("task", "%s: %s", shownPath(repoPath(repo, taskFile)), stopreasons.Plural(len(plan.Milestones), "milestone"))
	} else {
		r.row("task", "--prompt text: %s", stopreasons.Plural(len(plan.Milestones), "milestone"))
	}
	for i, g := range plan.Milestones {
		fmt.Fprintf(r.w, "  %-11s %d. %s\n", "", i+1, termtext.VisibleLine(g))
	}
}

// agent writes the agent the run calls and the fallbacks it may switch to.
func (r planRows) agent(plan *supervisor.Plan, cfg *config.Config) {
	r.row("agent", "%s", agentLine(plan.Agent, cfg))
	if plan.Switched != "" {
		r.row("", "%s", termtext.VisibleLine(plan.Switched))
	}
	for i, f := range plan.Fallback {
		key := ""
		if i == 0 {
			key = "fallback"
		}
		line := f.Kind
		if f.Model != "" {
			line += " · model " + f.Model
		}
		if f.Problem != "" {
			line += " · cannot be used now: " + f.Problem
		} else if f.Path != "" {
			line += " · " + shownPath(f.Path)
		}
		r.row(key, "%d. %s", i+1, termtext.VisibleLine(line))
	}
}

// workplace writes where the agent works, and what is dirty there.
func (r planRows) workplace(plan *supervisor.Plan, flags state.Flags) {
	if pp := plan.Parallel; pp != nil {
		r.parallel(pp)
		return
	}
	if flags.Worktree {
		r.row("work in", "a new worktree %s on branch runr/<run id>", shownPath(plan.Dir))
	} else {
		r.row("work in", "the checkout %s", shownPath(plan.Dir))
	}
	if len(plan.Dirty) > 0 {
		r.row("dirty", "%s", stopreasons.ShowFiles(plan.Dirty, plan.DirtyOmitted))
	}
}

// parallel writes a parallel run's layout: its workers and their
// worktrees, the groups, the integration branch and the merge queue.
func (r planRows) parallel(pp *supervisor.PlanParallel) {
	r.row("work in", "%s at once, each in a worktree of its own: %s", stopreasons.Plural(pp.Workers, "worker"), stopreasons.ShowPaths(shownPaths(pp.Worktrees)))
	r.row("", "on a branch per milestone, %s, from the integration branch's head when the milestone starts", pp.MilestoneBranch)
	base := "HEAD"
	if pp.Base != "" {
		base += " " + pp.Base[:min(12, len(pp.Base))]
	}
	r.row("integrate", "branch %s, in %s, from %s", pp.Branch, shownPath(pp.Integration), base)
	r.row("", "each approved milestone is merged there and verified on the merged tree, one at a time;")
	r.row("", "one that fails to merge goes back to a worker, at most %s (parallel.max_requeues)", stopreasons.Plural(pp.MaxRequeues, "time"))
	for i, g := range pp.Groups {
		key := ""
		if i == 0 {
			key = "groups"
		}
		nums := make([]string, len(g))
		for j, m := range g {
			nums[j] = strconv.Itoa(m)
		}
		if len(g) == 1 {
			r.row(key, "%d. milestone %s", i+1, nums[0])
		} else {
			r.row(key, "%d. milestones %s (up to %d at once)", i+1, strings.Join(nums, ", "), min(len(g), pp.Workers))
		}
	}
}

// shownPaths is paths as messages name them.
func shownPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = shownPath(p)
	}
	return out
}

// checks writes how each milestone is judged and kept: verify, review,
// checkpoint.
func (r planRows) checks(plan *supervisor.Plan, cfg *config.Config, flags state.Flags) {
	if len(cfg.Verify.Commands) == 0 {
		r.row("verify", "none")
	}
	for i, c := range cfg.Verify.Commands {
		key := ""
		if i == 0 {
			key = "verify"
		}
		r.row(key, "%s (timeout %s)", termtext.VisibleLine(c), config.FormatDuration(cfg.Verify.Timeout))
	}
	if len(cfg.Verify.Commands) > 0 {
		coverage := "changed lines not judged (coverage.min_changed 0)"
		if m := cfg.Verify.Coverage.MinChanged; m > 0 {
			coverage = fmt.Sprintf("at least %s%% of each milestone's changed executable lines must run (coverage.min_changed)", strconv.FormatFloat(m*100, 'f', -1, 64))
		}
		r.row("", "require_tests %s · %s", cfg.Verify.RequireTests, coverage)
	}
	if len(cfg.Review.Command) == 0 {
		r.row("review", "none")
	} else {
		r.row("review", "%s (exit 0 approves, 1 requests changes, 2 rejects)", termtext.VisibleLine(strings.Join(cfg.Review.Command, " ")))
	}
	switch {
	case plan.Parallel != nil:
		r.row("checkpoint", "a commit per approved milestone on its branch, squash-merged into the integration branch (always in a parallel run)")
	case flags.Worktree:
		r.row("checkpoint", "a commit per approved milestone on the run's branch (always with --worktree)")
	case cfg.Checkpoint.Commit:
		r.row("checkpoint", "a commit per approved milestone")
	default:
		r.row("checkpoint", "no commits (checkpoint.commit off): the changes are left uncommitted")
	}
}

// guards writes the scope, protect and lockfile guards and the sandbox.
func (r planRows) guards(plan *supervisor.Plan, cfg *config.Config, flags state.Flags) {
	r.row("scope", "allow %s · deny %s", listOr(cfg.Scope.Allow, "everything not denied"), listOr(cfg.Scope.Deny, "nothing"))
	if len(cfg.Scope.Protect) == 0 {
		r.row("", "protect nothing")
	} else {
		r.row("", "protect %s: existing matching files may not be modified, deleted or renamed (new ones may be added)", listOr(cfg.Scope.Protect, ""))
	}
	deps := "a change to one stops the run (--allow-deps allows it)"
	if flags.AllowDeps {
		deps = "may change (--allow-deps)"
	}
	r.row("", "lockfiles %s: %s", listOr(cfg.Scope.Lockfiles, "none"), deps)
	if sb := plan.Sandbox; sb != nil {
		r.row("sandbox", "%s", sandboxLine(*sb))
		if len(sb.Writable) > 0 {
			r.row("", "the agent may write: %s", stopreasons.ShowPaths(sb.Writable))
		}
		for _, w := range sb.Warnings {
			r.row("", "%s", termtext.VisibleLine(w))
		}
	}
}

// limits writes the budget and the built-in stop rules, from the rule
// table.
func (r planRows) limits(cfg *config.Config) {
	b := cfg.Budget
	r.row("budget", "time %s · max_ticks %s · max_iterations %s · max_cost_usd %s · max_tokens %s",
		offDuration(b.Time), offInt(int64(b.MaxTicks)), offInt(int64(b.MaxIterations)), offFloat(b.MaxCostUSD), offInt(b.MaxTokens))
	var rules []string
	for _, rule := range stopconditions.Builtins {
		rules = append(rules, rule.Key+" "+ruleValue(rule, cfg.Stop))
	}
	for i := 0; i < len(rules); i += 4 {
		key := ""
		if i == 0 {
			key = "stop rules"
		}
		r.row(key, "%s", strings.Join(rules[i:min(i+4, len(rules))], " · "))
	}
}

// printVerdict says whether the run would start, or the stop it would meet
// before its first tick.
func printVerdict(w io.Writer, p Painter, plan *supervisor.Plan) {
	fmt.Fprintln(w)
	if plan.Stop == nil {
		fmt.Fprintln(w, p.Green("The run would start.")+" Start it with the same command without --dry-run.")
		return
	}
	code := plan.Stop.Code
	fmt.Fprintf(w, "%s\n  %s\n", p.Red(fmt.Sprintf("The run would stop before its first tick: %s (exit %d)", code, stopreasons.ExitCode(code))),
		termtext.Visible(plan.Stop.Message))
	if d := plan.Stop.Details; d != nil && len(d.Files) > 0 {
		fmt.Fprintf(w, "  files: %s\n", stopreasons.ShowFiles(d.Files, d.FilesOmitted))
	}
}

// printConditions lists the custom conditions as written in the config.
func printConditions(w io.Writer, cfg *config.Config) {
	stop, _ := cfg.Raw["stop"].(map[string]any)
	first := true
	for _, list := range []string{"success", "failure", "conditions"} {
		items, _ := stop[list].([]any)
		for i, c := range items {
			b, err := json.Marshal(c)
			if err != nil {
				continue
			}
			key := ""
			if first {
				key, first = "conditions", false
			}
			fmt.Fprintf(w, "  %-11s stop.%s[%d] %s\n", key, list, i, termtext.VisibleLine(string(b)))
		}
	}
	if first {
		fmt.Fprintf(w, "  %-11s none (a `runr stop` request is always honoured)\n", "conditions")
	}
}

func agentLine(a supervisor.PlanAgent, cfg *config.Config) string {
	s := a.Kind
	if a.Path != "" {
		s += " · " + shownPath(a.Path)
	} else if a.Program != "" {
		s += " · " + termtext.VisibleLine(a.Program) + " (not found)"
	}
	if a.Version != "" {
		s += " · " + termtext.VisibleLine(a.Version)
	}
	if a.Model != "" {
		s += " · model " + termtext.VisibleLine(a.Model)
	}
	return s + fmt.Sprintf(" · timeout %s · idle timeout %s", config.FormatDuration(cfg.Agent.Timeout), config.FormatDuration(cfg.Agent.IdleTimeout))
}

func listOr(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return termtext.VisibleLine(strings.Join(list, ", "))
}

func offDuration(d time.Duration) string {
	if d <= 0 {
		return "off"
	}
	return config.FormatDuration(d)
}

// ruleValue is a built-in rule's value in the plan: a number, a rate or a
// mode, or what 0 means for the rule ("off", "unlimited").
func ruleValue(b *stopconditions.Builtin, r stopconditions.Rules) string {
	switch v := b.Value(r).(type) {
	case int:
		if v <= 0 && b.Zero != "" {
			return b.Zero
		}
		return strconv.Itoa(v)
	case float64:
		if v <= 0 && b.Zero != "" {
			return b.Zero
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return v
	}
	return ""
}

func offInt(n int64) string {
	if n <= 0 {
		return "off"
	}
	return strconv.FormatInt(n, 10)
}

func offFloat(f float64) string {
	if f <= 0 {
		return "off"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// sandboxLine is the decision of a dry run's sandbox row.
func sandboxLine(p sandbox.Plan) string {
	switch {
	case p.Mode == sandbox.ModeOff:
		return "off: the agent writes wherever its user may (--sandbox=on confines it)"
	case p.Refusal != "":
		return p.Mode + ": the run would stop: " + termtext.VisibleLine(p.Refusal)
	case !p.Confine:
		return p.Mode + ": unconfined, the kernel " + p.Kernel + " has no Landlock"
	case p.Namespace:
		return fmt.Sprintf("%s: Landlock ABI %d in a private mount namespace, read-only: %s", p.Mode, p.ABI, stopreasons.ShowPaths(p.ReadOnly))
	case p.TopLevel:
		return fmt.Sprintf("%s: Landlock ABI %d alone: the existing top-level entries are writable, not the root", p.Mode, p.ABI)
	}
	return fmt.Sprintf("%s: Landlock ABI %d", p.Mode, p.ABI)
}
