package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/doctor"
	"github.com/runr-dev/runr/internal/report"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// DoctorOptions are the parsed arguments of `runr doctor`.
type DoctorOptions struct {
	IO     *IOStreams
	Global *GlobalOptions
	Store  func() (*state.Store, error)
	Ref    string
	JSON   bool
}

// NewCmdDoctor builds `runr doctor`; runF, when a test passes one, gets the
// parsed options instead of doctorRun or doctorEnv.
func NewCmdDoctor(f *Factory, runF func(*DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{IO: f.IO, Global: f.Global, Store: f.StoreRead}
	cmd := &cobra.Command{
		Use:   "doctor [<id>|latest]",
		Short: "Explain why a run stopped and what to do next, or check the environment",
		Long: `With a run id (or latest): the stop reason, the diagnosis with the run's own
figures, the evidence, how close the other rules were, and the exact commands
to run next. Exits 0 when it could diagnose, whatever the run's reason.

Without an id: check the environment (git repository, run store, runr.yaml,
agent and verify programs, stale locks and claims, leftover temp files, orphan
worktrees). Exits 0 when all pass, 78 for an invalid config, 69 otherwise.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Ref = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			if len(args) == 1 {
				return doctorRun(opts)
			}
			return doctorEnv(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object")
	return cmd
}

func doctorRun(opts *DoctorOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	st, err := loadRun(store, opts.Ref)
	if err != nil {
		return err
	}
	st.RunStatus = store.DisplayStatus(st)
	rep, err := report.Diagnose(st, store.RunDir(st.RunID))
	if err != nil {
		return stopreasons.Wrap(stopreasons.StateCorrupt, err, "diagnose run %s", st.RunID)
	}
	if opts.JSON {
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		_, err = opts.IO.Out.Write(b)
		return err
	}
	return rep.WriteText(opts.IO.Out, opts.IO.ColorOut())
}

func doctorEnv(opts *DoctorOptions) error {
	wd, err := os.Getwd()
	if err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "cannot read the working directory")
	}
	home := opts.Global.Home
	if home == "" {
		home = lookupEnv(opts.IO.Environ, "RUNR_HOME")
	}
	eo := doctor.EnvOptions{
		Dir:        wd,
		Home:       home,
		ConfigFile: opts.Global.Config,
		Environ:    opts.IO.Environ,
		AgentKinds: agents.Kinds(),
	}
	if exe, err := os.Executable(); err == nil {
		eo.SandboxHelper = exe
	}
	// The agent to check comes from the config; an invalid config is
	// reported by the checks themselves.
	if top, err := repoRoot(); err == nil {
		if cfg, err := config.Load(config.LoadOptions{RepoRoot: top, ConfigFile: opts.Global.Config, Environ: opts.IO.Environ, AgentKinds: agents.Kinds()}); err == nil {
			if a, err := agents.Lookup(cfg.Agent.Kind); err == nil {
				eo.AgentProgram = a.Program(agents.Request{Command: cfg.Agent.Command})
				eo.AgentVersionArgs = a.VersionArgs()
				eo.CredentialEnv = a.CredentialEnv()
				eo.CredentialWarning = agents.CredentialWarning(a, opts.IO.Environ)
				sp := agents.StateDirs(cfg.Agent.Kind, lookupEnv(opts.IO.Environ, "HOME"), func(k string) string { return lookupEnv(opts.IO.Environ, k) })
				eo.SandboxState = append(eo.SandboxState, sp.Dirs...)
				for _, f := range sp.Files {
					eo.SandboxState = append(eo.SandboxState, f.Path)
				}
				eo.AgentProblem = agents.RootSandboxProblem(cfg.Agent.Kind, cfg.Agent.PermissionMode, os.Geteuid(), opts.IO.Environ)
				if err := agents.BudgetProblem(a, cfg.Budget.MaxCostUSD, cfg.Budget.MaxTokens, agents.Priced(cfg.Agent.Price.InputPerMTok, cfg.Agent.Price.OutputPerMTok, cfg.Agent.Model)); err != nil {
					eo.AgentProblem = err.Error()
				}
			}
		}
	}
	checks := doctor.CheckEnvironment(context.Background(), eo)
	verdict := doctor.Verdict(checks)
	if opts.JSON {
		if err := writeJSON(opts.IO.Out, map[string]any{"checks": checks, "verdict": verdict, "exit_code": stopreasons.ExitCode(verdict)}); err != nil {
			return err
		}
	} else {
		p := opts.IO.OutPainter()
		for _, c := range checks {
			mark := p.Green("ok  ")
			switch {
			case !c.OK:
				mark = p.Red("FAIL")
			case c.Warning:
				mark = p.Yellow("warn")
			}
			// A detail may quote a program's output (its version line);
			// one that is a path is named as every message names one.
			detail := termtext.Visible(c.Detail)
			if filepath.IsAbs(c.Detail) {
				detail = shownPath(c.Detail)
			}
			opts.IO.Out.Write([]byte(mark + " " + c.Name + ": " + detail + "\n"))
		}
		if verdict == stopreasons.Complete {
			opts.IO.Out.Write([]byte(p.Green("All checks passed.") + "\n"))
		} else {
			opts.IO.Out.Write([]byte(p.Red("Some checks failed.") + " (" + string(verdict) + ")\n"))
		}
	}
	if verdict == stopreasons.Complete {
		return nil
	}
	return &stopError{code: verdict}
}
