package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/doctor"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/initcfg"
	"github.com/runr-dev/runr/internal/resume"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/task"
	"github.com/runr-dev/runr/internal/termtext"
)

// RunOptions are the parsed arguments of `runr run`.
type RunOptions struct {
	IO       *IOStreams
	Global   *GlobalOptions
	RepoRoot func() (string, error)
	Store    func() (*state.Store, error)
	// StoreRead opens the store for reading only: a dry run creates nothing.
	StoreRead func() (*state.Store, error)
	Version   string

	Task, Prompt string
	// Overrides are the settings given by flags (--task, --time, ..., and
	// an agent argv after --), the highest layer of the config.
	Overrides   []config.Override
	AgentArgv   []string
	Flags       state.Flags
	JSON, Quiet bool
	AutoResume  bool // continue after an auto-resumable stop
	NoProtect   bool // clear scope.protect for this run
	DryRun      bool // make the checks, print the plan, create nothing
	// RunID names the run (--run-id); the same command again resumes it,
	// or reports it when it stopped for good.
	RunID string
	// budget holds the budget flags as typed (time, max-ticks, ...), for
	// the total budget of an existing --run-id run.
	budget map[string]string
}

func (o *RunOptions) flagValue(name string) string { return o.budget[name] }

// configFlags map `runr run` flags to config keys; their values are
// checked by config, so `--time banana` is config_invalid like a bad
// runr.yaml value.
// kind is the kind of value the help shows for a single-valued flag.
var configFlags = []struct {
	flag, key, usage string
	list             bool
	kind             string
}{
	{"agent", "agent.kind", "agent kind: " + kindsText(), false, "string"},
	{"verify", "verify.commands", "verification command, run with sh -c (repeatable)", true, ""},
	{"time", "budget.time", "time budget, e.g. 30m or 1h30m (a bare number means minutes)", false, "duration"},
	{"max-ticks", "budget.max_ticks", "at most this many phase steps", false, "int"},
	{"max-iterations", "budget.max_iterations", "at most this many agent calls", false, "int"},
	{"max-cost", "budget.max_cost_usd", "cost budget in USD", false, "float"},
	{"allow", "scope.allow", "glob of files the agent may change (repeatable)", true, ""},
	{"deny", "scope.deny", "glob of files the agent must not change (repeatable)", true, ""},
	{"protect", "scope.protect", "glob of existing files the agent may not modify, delete or rename; new ones may be added (repeatable)", true, ""},
	{"parallel", "parallel.workers", "work up to N milestones of a ## group at once, each in its own worktree, merged through a verified queue (docs/parallel.md)", false, "int"},
	{"sandbox", "sandbox.mode", "confine the agent's writes with Landlock: on, auto or off (--sandbox alone means on; write --sandbox=MODE)", false, "mode"},
}

// kindsText lists the agent kinds for --agent's help: "claude, codex, ...
// or command".
func kindsText() string {
	k := agents.Kinds()
	return strings.Join(k[:len(k)-1], ", ") + " or " + k[len(k)-1]
}

// adapterKinds are the kinds of agent CLIs runr has an adapter for: every
// kind but command, which runs any program.
func adapterKinds() []string {
	return slices.DeleteFunc(agents.Kinds(), func(k string) bool { return k == agents.CommandKind })
}

// NewCmdRun builds `runr run`; runF, when a test passes one, gets the parsed
// options instead of runRun.
func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IO, Global: f.Global, RepoRoot: f.RepoRoot, Store: f.Store, StoreRead: f.StoreRead, Version: f.Version}
	values := map[string]*string{}
	lists := map[string]*[]string{}
	cmd := &cobra.Command{
		Use:   "run [flags] [-- AGENT ARGV...]",
		Short: "Run an agent on the task until it completes or a stop rule fires",
		Long: `Run an agent in a loop on the task's milestones: implement, verify, review,
checkpoint. The settings come from runr.yaml, RUNR_* variables and these
flags, in rising precedence. An argv after -- runs that program as the agent
(agent.kind command), with the prompt on stdin or substituted for {prompt}
or {prompt_file}.

The exit code says why the run stopped: see 'runr reasons'. With --dry-run,
runr makes every check a run makes before its first tick, prints the plan
(milestones, agent, verify, scope, budgets, stop rules) and creates nothing;
it exits 0, or with the code the run would stop with.`,
		Example: `  runr run --time 30m
  runr run --task TASK.md --verify 'go test ./...' -- ./my-agent.sh
  runr run --agent claude --task TASK.md --verify 'go test ./...' --max-cost 5
  runr run --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash > 0 {
					if cmd.Flags().Lookup("sandbox").Changed && slices.Contains(config.SandboxModes, args[0]) {
						return stopreasons.Errorf(stopreasons.UsageError, "unexpected argument %q: write --sandbox=%s (--sandbox alone means on)", args[0], args[0])
					}
					return stopreasons.Errorf(stopreasons.UsageError, "unexpected argument %q before --: the agent's argv goes after --", args[0])
				}
				opts.AgentArgv = args
			} else if len(args) > 0 {
				if cmd.Flags().Lookup("sandbox").Changed && slices.Contains(config.SandboxModes, args[0]) {
					return stopreasons.Errorf(stopreasons.UsageError, "unexpected argument %q: write --sandbox=%s (--sandbox alone means on)", args[0], args[0])
				}
				return stopreasons.Errorf(stopreasons.UsageError, "unexpected argument %q: put the agent's argv after --", args[0])
			}
			if cmd.Flags().Lookup("run-id").Changed {
				if err := state.CheckRunName(opts.RunID); err != nil {
					return err
				}
			}
			opts.budget = map[string]string{}
			for _, cf := range configFlags {
				if !cmd.Flags().Lookup(cf.flag).Changed {
					continue
				}
				if !cf.list {
					opts.budget[cf.flag] = *values[cf.flag]
				}
				var v any
				if cf.list {
					v = *lists[cf.flag]
				} else {
					v = *values[cf.flag]
				}
				opts.Overrides = append(opts.Overrides, config.Override{Key: cf.key, Value: v, Source: "--" + cf.flag})
			}
			if opts.NoProtect {
				if cmd.Flags().Lookup("protect").Changed {
					return stopreasons.Errorf(stopreasons.UsageError, "--no-protect and --protect cannot be used together: --no-protect clears scope.protect for this run, --protect replaces it")
				}
				opts.Overrides = append(opts.Overrides, config.Override{Key: "scope.protect", Value: []string{}, Source: "--no-protect"})
			}
			if len(opts.AgentArgv) > 0 {
				opts.Overrides = append(opts.Overrides,
					config.Override{Key: "agent.kind", Value: agents.CommandKind, Source: "-- ARGV"},
					config.Override{Key: "agent.command", Value: opts.AgentArgv, Source: "-- ARGV"})
			}
			if opts.Task != "" {
				opts.Overrides = append(opts.Overrides, config.Override{Key: "task", Value: opts.Task, Source: "--task"})
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Task, "task", "", "task file (its unchecked '- [ ]' items are the milestones)")
	fl.StringVar(&opts.Prompt, "prompt", "", "task text, instead of a task file")
	for _, cf := range configFlags {
		if cf.list {
			lists[cf.flag] = fl.StringArray(cf.flag, nil, cf.usage)
		} else {
			values[cf.flag] = new(string)
			fl.Var(&typedFlag{value: values[cf.flag], kind: cf.kind}, cf.flag, cf.usage)
		}
	}
	fl.Lookup("sandbox").NoOptDefVal = config.SandboxOn
	fl.BoolVar(&opts.NoProtect, "no-protect", false, "clear scope.protect for this run: the agent may change existing protected files (tests)")
	fl.BoolVar(&opts.Flags.AllowDeps, "allow-deps", false, "allow the agent to change lockfiles")
	fl.BoolVar(&opts.Flags.AllowDirty, "allow-dirty", false, "start even with uncommitted changes")
	fl.BoolVar(&opts.Flags.ForceParallel, "force-parallel", false, "start even when a live run claims an overlapping scope")
	fl.BoolVar(&opts.Flags.Worktree, "worktree", false, "work in a new git worktree on branch runr/<id>")
	fl.BoolVar(&opts.JSON, "json", false, "print one JSON summary object on stdout at the end")
	fl.BoolVar(&opts.Quiet, "quiet", false, "no progress output, only the summary")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "make the checks before the first tick and print the plan; create no run, call no agent")
	fl.BoolVar(&opts.AutoResume, "auto-resume", false, "after a transient stop (stalled, worker_timeout, worker_rate_limited, terminated) wait and continue")
	fl.StringVar(&opts.RunID, "run-id", "", "the run's id (a-z, 0-9, . _ -); when that run exists, resume it, or report it if it stopped for good")
	return cmd
}

func runRun(opts *RunOptions) error {
	io := opts.IO
	if err := doctor.RunEnvProblem(io.Environ); err != nil {
		return err
	}
	repo, err := opts.RepoRoot()
	if err != nil {
		return err
	}
	if opts.RunID != "" && !opts.DryRun {
		store, err := opts.Store()
		if err != nil {
			return err
		}
		if _, err := store.Resolve(opts.RunID); err == nil {
			return runExisting(opts, store, repo)
		} else if stopreasons.CodeOf(err) != stopreasons.RunNotFound {
			return err
		}
	}
	// The repository's config is read by git while runr reads its own.
	defer guard.Prefetch(context.Background(), repo)()
	cfg, err := config.Load(config.LoadOptions{RepoRoot: repo, ConfigFile: opts.Global.Config, Environ: io.Environ, Overrides: opts.Overrides, AgentKinds: agents.Kinds(), Show: shownPath})
	if err != nil {
		return err
	}
	taskFile, prompt, err := readTask(repo, opts, cfg)
	if err != nil {
		return err
	}
	if task.AllChecked(prompt) {
		return nothingToDo(io, repo, taskFile, opts.JSON)
	}
	if cfg.Agent.Kind == agents.CommandKind && len(cfg.Agent.Command) == 0 {
		// Like a missing task, nothing to run: no run is created.
		return stopreasons.Errorf(stopreasons.UsageError, "no agent: give its argv after -- (runr run --task TASK.md -- ./my-agent.sh), pass --agent %s, or set agent.kind / agent.command in runr.yaml",
			strings.Join(adapterKinds(), "|"))
	}
	if err := checkPromptArgv(cfg, prompt); err != nil {
		return err
	}
	warnConfig(io, cfg)
	if cfg.Parallel.Workers > 1 && opts.AutoResume {
		return stopreasons.Errorf(stopreasons.UsageError,
			"--auto-resume does not apply to a parallel run (parallel.workers %d): run without it, and continue a stopped run with `runr resume <id>`, which resumes every worker", cfg.Parallel.Workers)
	}
	if opts.DryRun {
		store, err := opts.StoreRead()
		if err != nil {
			return err
		}
		return dryRun(opts, cfg, store, repo, taskFile, prompt)
	}
	if w := initcfg.TemplateWarning(prompt); w != "" {
		fmt.Fprintf(io.Err, "runr: warning: %s\n", w)
	}
	store, err := opts.Store()
	if err != nil {
		return err
	}
	return workOn(io, supervisor.Options{Config: cfg, Store: store, Repo: repo, Environ: io.Environ, Version: opts.Version,
		Flags: startedFlags(opts), TaskFile: taskFile, Prompt: prompt, RunID: opts.RunID}, nil, opts.AutoResume, opts.Quiet, opts.JSON)
}

// startedFlags are the run's switches with the config keys its flags set,
// which a resume keeps whatever runr.yaml and RUNR_* say by then.
func startedFlags(opts *RunOptions) state.Flags {
	f := opts.Flags
	f.Settings = nil
	for _, o := range opts.Overrides {
		if !slices.Contains(f.Settings, o.Key) {
			f.Settings = append(f.Settings, o.Key)
		}
	}
	slices.Sort(f.Settings)
	return f
}

// runExisting carries on the run --run-id names, which exists: a completed
// run is reported (exit 0); a run stopped for good, or whose budget (the
// budget flags are its total) is used up, is reported with its last stop's
// exit code; any other run is resumed as `runr resume` would, its budget
// flags being the total.
func runExisting(opts *RunOptions, store *state.Store, repo string) error {
	io := opts.IO
	grant, err := parseGrant(&ResumeOptions{Time: opts.flagValue("time"), MaxTicks: opts.flagValue("max-ticks"),
		MaxIterations: opts.flagValue("max-iterations"), MaxCost: opts.flagValue("max-cost")})
	if err != nil {
		return err
	}
	st, err := store.Load(opts.RunID)
	if err != nil {
		return err
	}
	if st.RunStatus != stopreasons.RunRunning && st.StopReason != nil && (st.RunStatus == stopreasons.RunCompleted || !st.Resumable) {
		return reportExisting(opts, store, st, "")
	}
	head, _ := guard.Head(context.Background(), repo)
	plan, err := resume.Open(store, resume.Request{
		Ref:           opts.RunID,
		Grant:         grant,
		Total:         true,
		AllowDeps:     opts.Flags.AllowDeps,
		ForceParallel: opts.Flags.ForceParallel,
		Config:        config.LoadOptions{RepoRoot: repo, ConfigFile: opts.Global.Config, Environ: io.Environ, AgentKinds: agents.Kinds()},
		RunrVersion:   opts.Version,
		GitHead:       head,
	})
	if errors.Is(err, resume.ErrSpent) {
		if last, lerr := store.Load(opts.RunID); lerr == nil && last.StopReason != nil {
			return reportExisting(opts, store, last, err.Error())
		}
	}
	if err != nil {
		return err
	}
	if err := checkRecordedRepo(store, plan.State, repo); err != nil {
		plan.Release()
		return err
	}
	if plan.Completed {
		return reportExisting(opts, store, plan.State, "")
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(io.Err, "runr: warning: %s\n", termtext.Visible(w))
	}
	if !opts.Quiet {
		fmt.Fprintf(io.Err, "runr: run %s exists: resuming it at milestone %d/%d, phase %s\n", plan.RunID, plan.From.Milestone, len(plan.State.Milestones), plan.From.Phase)
	}
	return workOn(io, supervisor.Options{Store: store, Repo: repo, Environ: io.Environ, Version: opts.Version}, plan, opts.AutoResume, opts.Quiet, opts.JSON)
}

// reportExisting prints the summary of a run --run-id names that does not
// go on, and exits with its last stop's code (0 for a completed run).
func reportExisting(opts *RunOptions, store *state.Store, st *state.State, why string) error {
	if !opts.Quiet {
		msg := fmt.Sprintf("runr: run %s already stopped (%s): nothing to continue; its last stop follows", st.RunID, st.StopReason.Code)
		if st.StopReason.Code == stopreasons.Complete {
			msg = fmt.Sprintf("runr: run %s already completed: nothing to do", st.RunID)
		} else if why != "" {
			msg = fmt.Sprintf("runr: %s; its last stop follows", termtext.VisibleLine(why))
		}
		fmt.Fprintln(opts.IO.Err, msg)
	}
	return finishRun(opts.IO, store, st, nil, opts.JSON, nil)
}

// nothingToDo ends a run whose task has every checklist item checked
// before anything is created (DESIGN §2): exit 0.
func nothingToDo(io *IOStreams, repo, taskFile string, asJSON bool) error {
	source := "the task"
	if taskFile != "" {
		source = shownPath(repoPath(repo, taskFile))
	}
	msg := fmt.Sprintf("nothing to do: every checklist item of %s is checked; no run was created", source)
	if asJSON {
		return writeJSON(io.Out, map[string]any{"nothing_to_do": true, "task": taskFile, "message": msg})
	}
	fmt.Fprintln(io.Out, termtext.VisibleLine(msg))
	return nil
}

// readTask finds the task: --prompt text, else the task file (--task, or
// task: in the config). It returns the file relative to the repository.
func readTask(repo string, opts *RunOptions, cfg *config.Config) (string, string, error) {
	if opts.Prompt != "" && opts.Task != "" {
		return "", "", stopreasons.Errorf(stopreasons.UsageError, "--task and --prompt cannot be used together: give the task as a file or as text")
	}
	if opts.Prompt != "" {
		if err := task.CheckText(opts.Prompt, "--prompt"); err != nil {
			return "", "", err
		}
		return "", opts.Prompt, nil
	}
	if cfg.Task == "" {
		return "", "", stopreasons.Errorf(stopreasons.UsageError, "no task: give --task FILE or --prompt TEXT, or set task: in runr.yaml")
	}
	path := cfg.Task
	if opts.Task == "" && !filepath.IsAbs(path) {
		path = filepath.Join(repo, path) // task: in runr.yaml is relative to the repository
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", stopreasons.Wrap(stopreasons.UsageError, err, "task file %s", cfg.Task)
	}
	text, err := task.Read(abs, shownPath(abs))
	if err != nil {
		return "", "", err
	}
	rel, err := filepath.Rel(repo, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = ""
	}
	return rel, text, nil
}

// checkPromptArgv refuses, before the run is created, a first prompt that
// the agent's argv cannot carry in {prompt}.
func checkPromptArgv(cfg *config.Config, text string) error {
	if cfg.Agent.Kind != agents.CommandKind {
		return nil
	}
	return agents.CheckArgvPrompt(cfg.Agent.Command, task.FirstPrompt(text, cfg.Agent.CompletionPromise))
}

// warnConfig prints, before a run starts, the config's warnings and what a
// run with no check at all means.
func warnConfig(io *IOStreams, cfg *config.Config) {
	for _, w := range cfg.Warnings {
		fmt.Fprintf(io.Err, "runr: warning: %s\n", termtext.Visible(w))
	}
	if len(cfg.Verify.Commands) == 0 && len(cfg.Review.Command) == 0 {
		fmt.Fprintln(io.Err, "runr: warning: no verify command and no review: each milestone is approved on the agent's word (pass --verify 'CMD' or set verify.commands in runr.yaml)")
	}
}

// finishRun prints the summary of a stopped run and turns its reason into
// the exit code. cfg is the run's config, nil when unknown.
func finishRun(io *IOStreams, store *state.Store, st *state.State, runErr error, asJSON bool, cfg *config.Config) error {
	if st == nil || st.StopReason == nil {
		if runErr == nil {
			runErr = stopreasons.Errorf(stopreasons.InternalError, "the run ended without a stop reason")
		}
		return runErr
	}
	if runErr != nil {
		fmt.Fprintf(io.Err, "runr: warning: %s\n", termtext.Visible(runErr.Error()))
	}
	if asJSON {
		if err := writeJSON(io.Out, runSummary(store, st)); err != nil {
			return err
		}
	} else {
		printSummary(io, store, st, cfg)
	}
	githubReport(io, store, st)
	if st.StopReason.Code == stopreasons.Complete {
		return nil
	}
	return &stopError{code: st.StopReason.Code}
}
