package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/initcfg"
)

// InitOptions are the parsed arguments of `runr init`.
type InitOptions struct {
	IO       *IOStreams
	RepoRoot func() (string, error)
	Force    bool
}

// NewCmdInit builds `runr init`; runF, when a test passes one, gets the
// parsed options instead of initRun.
func NewCmdInit(f *Factory, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{IO: f.IO, RepoRoot: f.RepoRoot}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented runr.yaml for this repository, and a TASK.md template",
		Long: `Write runr.yaml in the repository root: the verify command found from the
project (go.mod: go test ./..., Cargo.toml: cargo test, package.json with a
test script: npm test, pyproject.toml: python3 -m pytest, a Makefile with a
test target: make test), the agent CLI found on PATH, a scope that keeps the
agent off runr.yaml and the CI workflows, the lockfiles, and the budget, each
with a comment. Also write TASK.md, a task template, when there is none.

An existing runr.yaml is replaced only with --force; an existing TASK.md is
always kept. A symbolic link at either name is refused.`,
		Example: `  runr init
  runr init --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return initRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace an existing runr.yaml")
	return cmd
}

func initRun(opts *InitOptions) error {
	io := opts.IO
	repo, err := opts.RepoRoot()
	if err != nil {
		return err
	}
	res, err := initcfg.Init(initcfg.Options{Dir: repo, Force: opts.Force, Environ: io.Environ, Show: shownPath})
	if err != nil {
		return err
	}
	w := io.Out
	verb := "Wrote"
	if res.Replaced {
		verb = "Replaced"
	}
	fmt.Fprintf(w, "%s %s\n", verb, shownPath(res.Config))
	switch p := res.Project; {
	case p.Verify != "":
		fmt.Fprintf(w, "  verify: %s (from %s)\n", p.Verify, p.Marker)
	default:
		fmt.Fprintf(w, "  verify: none: %s\n", p.Note)
	}
	if res.AgentFound {
		fmt.Fprintf(w, "  agent: %s (found on PATH)\n", res.Agent)
	} else {
		fmt.Fprintf(w, "  agent: %s (not found on PATH: install it, or set agent.kind)\n", res.Agent)
	}
	task := shownPath(res.Task)
	if res.TaskWritten {
		fmt.Fprintf(w, "Wrote %s: a template; replace its milestones with yours\n", task)
	} else {
		fmt.Fprintf(w, "Kept %s\n", task)
	}
	fmt.Fprintln(w, "Next:")
	fmt.Fprintf(w, "  $ runr run --dry-run\n")
	fmt.Fprintf(w, "  $ runr run\n")
	return nil
}
