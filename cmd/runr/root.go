package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// Main runs runr with args and returns the process exit code.
func Main(args []string, io *IOStreams) int {
	root, parsed := newRootCmd(NewFactory(io))
	root.SetArgs(args)
	err := root.Execute()
	if err != nil && !*parsed {
		// cobra failed before any command ran: an unknown command, a bad
		// flag or the wrong number of arguments.
		err = usageErr(err)
	}
	if err != nil {
		var se *stopError
		if !errors.As(err, &se) {
			printError(io, err, !*parsed)
		}
	}
	return exitCode(err)
}

// printError reports an error on stderr; after a parse error (an unknown
// flag or command, wrong arguments) it points to --help.
func printError(io *IOStreams, err error, parseError bool) {
	p := io.ErrPainter()
	code := stopreasons.CodeOf(err)
	// An error may quote an agent's output or a file's name.
	msg := termtext.Visible(err.Error())
	fmt.Fprintf(io.Err, "%s %s\n", p.Red("runr: error:"), msg)
	if parseError && !strings.Contains(msg, "--help") {
		fmt.Fprintln(io.Err, p.Dim("Run 'runr --help' for usage."))
	}
	fmt.Fprintf(io.Err, "%s\n", p.Dim(fmt.Sprintf("(%s, exit %d)", code, stopreasons.ExitCode(code))))
}

// newRootCmd builds the root command with every command of runr; parsed
// tells, after Execute, whether the command line was parsed (so that an
// error before that is a usage error).
func newRootCmd(f *Factory) (*cobra.Command, *bool) {
	io, g := f.IO, f.Global
	parsed := new(bool)
	root := &cobra.Command{
		Use:   "runr",
		Short: "Supervise unattended AI coding-agent runs",
		Long: `runr runs an AI coding agent in a loop against a git repository, checks each
step with verification commands, enforces stop rules, writes its state
crash-safely after every tick, and exits with a code that says why it stopped.

Every exit code is listed by 'runr reasons'.`,
		Version:       f.Build.String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			*parsed = true
			if g.NoColor {
				io.NoColor = true
			}
			return nil
		},
	}
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	// `runr completion` is runr's own command, with its exit codes.
	root.CompletionOptions.DisableDefaultCmd = true
	// --version prints what `runr version` prints.
	root.SetVersionTemplate("{{.Version}}")

	pf := root.PersistentFlags()
	pf.StringVar(&g.Home, "home", "", "run store directory (default <git common dir>/runr; env RUNR_HOME)")
	pf.StringVar(&g.Config, "config", "", "config file (default runr.yaml in the repository root)")
	pf.BoolVar(&g.NoColor, "no-color", false, "never colour the output (also NO_COLOR)")

	root.AddCommand(
		NewCmdRun(f, nil),
		NewCmdResume(f, nil),
		NewCmdStatus(f, nil),
		NewCmdStop(f, nil),
		NewCmdDoctor(f, nil),
		NewCmdLogs(f, nil),
		NewCmdWatch(f, nil),
		NewCmdReasons(f, nil),
		NewCmdInit(f, nil),
		NewCmdPrune(f, nil),
		NewCmdReport(f, nil),
		NewCmdExport(f, nil),
		NewCmdCompletion(f),
		NewCmdVersion(f, nil),
	)
	addCompletions(root, f)
	return root, parsed
}
