package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/doctor"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/resume"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/termtext"
)

// ResumeOptions are the parsed arguments of `runr resume`.
type ResumeOptions struct {
	IO       *IOStreams
	Global   *GlobalOptions
	RepoRoot func() (string, error)
	Store    func() (*state.Store, error)
	Version  string

	Ref string
	// The budget flags as typed; parsed in resumeRun so that a bad value is
	// config_invalid, not a usage error.
	Time, MaxTicks, MaxIterations, MaxCost string

	AllowDeps, ForceParallel, Force bool
	AutoResume, Plan                bool
	JSON, Quiet                     bool
}

// NewCmdResume builds `runr resume`; runF, when a test passes one, gets the
// parsed options instead of resumeRun.
func NewCmdResume(f *Factory, runF func(*ResumeOptions) error) *cobra.Command {
	opts := &ResumeOptions{IO: f.IO, Global: f.Global, RepoRoot: f.RepoRoot, Store: f.Store, Version: f.Version}
	cmd := &cobra.Command{
		Use:   "resume <id>|latest",
		Short: "Continue a stopped or crashed run where it stopped",
		Long: `Continue a run at the milestone and phase where it stopped, with the budget it
has left. --time, --max-ticks, --max-iterations and --max-cost grant more on
top of what the run has used. A resume gives the current milestone fresh
retries and restarts the streak counters; totals carry on. A crashed run
(its runr process died) is cleaned up first: its orphaned agent process group
is stopped. --plan shows what a resume would do and changes nothing.

The exit code says why the run stopped: see 'runr reasons'.`,
		Example: `  runr resume latest
  runr resume 20261121T230017Z-3f9a1c --time 30m
  runr resume latest --auto-resume --plan`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			if runF != nil {
				return runF(opts)
			}
			return resumeRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.Var(&typedFlag{value: &opts.Time, kind: "duration"}, "time", "grant this much more time, e.g. 30m (a bare number means minutes)")
	fl.Var(&typedFlag{value: &opts.MaxTicks, kind: "int"}, "max-ticks", "grant this many more phase steps")
	fl.Var(&typedFlag{value: &opts.MaxIterations, kind: "int"}, "max-iterations", "grant this many more agent calls")
	fl.Var(&typedFlag{value: &opts.MaxCost, kind: "float"}, "max-cost", "grant this much more cost budget in USD")
	fl.BoolVar(&opts.AllowDeps, "allow-deps", false, "allow the agent to change lockfiles from now on")
	fl.BoolVar(&opts.ForceParallel, "force-parallel", false, "continue even when a live run claims an overlapping scope")
	fl.BoolVar(&opts.Force, "force", false, "continue even though the config changed since the run started")
	fl.BoolVar(&opts.AutoResume, "auto-resume", false, "after a transient stop (stalled, worker_timeout, worker_rate_limited, terminated) wait and continue")
	fl.BoolVar(&opts.Plan, "plan", false, "print what the resume would do and change nothing")
	fl.BoolVar(&opts.JSON, "json", false, "print one JSON object on stdout at the end")
	fl.BoolVar(&opts.Quiet, "quiet", false, "no progress output, only the summary")
	return cmd
}

// parseGrant reads the budget flags; a bad value is config_invalid, named
// with its flag.
func parseGrant(opts *ResumeOptions) (resume.Grant, error) {
	var g resume.Grant
	var err error
	if opts.Time != "" {
		if g.Time, err = config.ParseBudgetTime(opts.Time); err != nil {
			return g, fmt.Errorf("--time %s: %w", opts.Time, err)
		}
	}
	count := func(flag, v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return 0, stopreasons.Errorf(stopreasons.ConfigInvalid, "%s %s: not a whole number greater than 0 (e.g. %s 50)", flag, v, flag)
		}
		return n, nil
	}
	if opts.MaxTicks != "" {
		if g.MaxTicks, err = count("--max-ticks", opts.MaxTicks); err != nil {
			return g, err
		}
	}
	if opts.MaxIterations != "" {
		if g.MaxIterations, err = count("--max-iterations", opts.MaxIterations); err != nil {
			return g, err
		}
	}
	if opts.MaxCost != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(opts.MaxCost), 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return g, stopreasons.Errorf(stopreasons.ConfigInvalid, "--max-cost %s: not an amount in USD greater than 0 (e.g. --max-cost 5)", opts.MaxCost)
		}
		g.MaxCostUSD = f
	}
	return g, nil
}

func resumeRun(opts *ResumeOptions) error {
	io := opts.IO
	grant, err := parseGrant(opts)
	if err != nil {
		return err
	}
	if err := doctor.RunEnvProblem(io.Environ); err != nil {
		return err
	}
	store, err := opts.Store()
	if err != nil {
		return err
	}
	repo, err := opts.RepoRoot()
	if err != nil {
		return err
	}
	head, _ := guard.Head(context.Background(), repo)
	plan, err := resume.Open(store, resume.Request{
		Ref:           opts.Ref,
		Grant:         grant,
		AllowDeps:     opts.AllowDeps,
		ForceParallel: opts.ForceParallel,
		Force:         opts.Force,
		DryRun:        opts.Plan,
		Config:        config.LoadOptions{RepoRoot: repo, ConfigFile: opts.Global.Config, Environ: io.Environ, AgentKinds: agents.Kinds()},
		RunrVersion:   opts.Version,
		GitHead:       head,
	})
	if err != nil {
		return err
	}
	if plan.Completed {
		if opts.JSON {
			return writeJSON(io.Out, map[string]any{"run_id": plan.RunID, "run_status": plan.State.RunStatus, "resumed": false,
				"message": "the run completed; there is nothing to resume"})
		}
		fmt.Fprintf(io.Out, "Run %s completed: there is nothing to resume.\n", plan.RunID)
		return nil
	}
	if err := checkRecordedRepo(store, plan.State, repo); err != nil {
		plan.Release()
		return err
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(io.Err, "runr: warning: %s\n", termtext.Visible(w))
	}
	if opts.Plan {
		return printPlan(io, plan, opts)
	}
	return workOn(io, supervisor.Options{Store: store, Repo: repo, Environ: io.Environ, Version: opts.Version}, plan, opts.AutoResume, opts.Quiet, opts.JSON)
}

// printPlan shows what `runr resume` would do, on stdout, and exits as the
// resume would: 0 when it would go ahead, usage_error (64) when the config
// changed and it needs --force.
func printPlan(io *IOStreams, plan *resume.Plan, opts *ResumeOptions) error {
	if err := showPlan(io, plan, opts); err != nil {
		return err
	}
	if len(plan.ChangedKeys) > 0 && !opts.Force {
		return &stopError{code: stopreasons.UsageError}
	}
	return nil
}

func showPlan(io *IOStreams, plan *resume.Plan, opts *ResumeOptions) error {
	st := plan.State
	from := plan.From
	rem := plan.Remaining
	if opts.JSON {
		out := map[string]any{
			"run_id":       plan.RunID,
			"crashed":      plan.Crashed,
			"resume_from":  from,
			"granted":      nonNil(plan.Granted),
			"resets":       nonNil(plan.Resets),
			"changed_keys": nonNil(plan.ChangedKeys),
			"warnings":     nonNil(plan.Warnings),
			"budget":       st.Budget,
			"auto_resume":  opts.AutoResume,
		}
		if rem.Time != nil {
			out["remaining_time_ms"] = rem.Time.Milliseconds()
		}
		return writeJSON(io.Out, out)
	}
	w := io.Out
	status := st.RunStatus
	if plan.Crashed {
		status = "crashed"
	}
	fmt.Fprintf(w, "Plan for run %s (%s", plan.RunID, status)
	if st.StopReason != nil && !plan.Crashed {
		fmt.Fprintf(w, ", %s", st.StopReason.Code)
	}
	fmt.Fprintln(w, "):")
	if plan.Crashed {
		fmt.Fprintln(w, "  recover from the crash: stop the agent process group it recorded, if still alive")
	}
	goal := ""
	if i := from.Milestone - 1; i >= 0 && i < len(st.Milestones) {
		goal = ": " + termtext.VisibleLine(st.Milestones[i].Goal)
	}
	fmt.Fprintf(w, "  continue at milestone %d/%d%s, phase %s\n", from.Milestone, len(st.Milestones), goal, from.Phase)
	var left []string
	if rem.Time != nil {
		left = append(left, stopreasons.Duration(*rem.Time)+" of time")
	}
	if rem.Ticks != nil {
		left = append(left, stopreasons.Plural(*rem.Ticks, "tick"))
	}
	if rem.Iterations != nil {
		left = append(left, stopreasons.Plural(*rem.Iterations, "iteration"))
	}
	if rem.CostUSD != nil {
		left = append(left, fmt.Sprintf("$%.2f", *rem.CostUSD))
	}
	if rem.Tokens != nil {
		left = append(left, stopreasons.Plural(int(*rem.Tokens), "token"))
	}
	if len(left) == 0 {
		left = append(left, "no limit")
	}
	fmt.Fprintf(w, "  budget left: %s\n", strings.Join(left, ", "))
	for _, g := range plan.Granted {
		fmt.Fprintf(w, "  grant %s\n", g)
	}
	for _, r := range plan.Resets {
		fmt.Fprintf(w, "  reset %s\n", r)
	}
	if len(plan.ChangedKeys) > 0 {
		need := " (a resume needs --force)"
		if opts.Force {
			need = " (--force: the resume uses the new values)"
		}
		fmt.Fprintf(w, "  config changed since the start: %s%s\n", strings.Join(plan.ChangedKeys, ", "), need)
	}
	if opts.AutoResume {
		fmt.Fprintln(w, "  auto-resume after a transient stop")
	}
	fmt.Fprintln(w, "Nothing was changed (--plan).")
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
