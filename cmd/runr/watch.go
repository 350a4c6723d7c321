package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/watch"
)

// WatchOptions are the parsed arguments of `runr watch`.
type WatchOptions struct {
	IO        *IOStreams
	Store     func() (*state.Store, error) // read only: the dashboard
	StopStore func() (*state.Store, error) // what `runr stop` opens
	// InTTY says stdin is a terminal (the keys come from it).
	InTTY bool
}

// NewCmdWatch builds `runr watch`; runF, when a test passes one, gets the
// parsed options instead of watchRun.
func NewCmdWatch(f *Factory, runF func(*WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{IO: f.IO, Store: f.StoreRead, StopStore: f.Store}
	return &cobra.Command{
		Use:   "watch",
		Short: "A terminal dashboard of the runs: follow one, stop one",
		Long: `A full-screen dashboard of this repository's runs, read again every second:
each live run with its milestone (n/N and goal), phase, tick, workers (parallel
runs), elapsed time against the time budget, cost against the cost budget, the
stop rule closest to firing, and the agent's latest activity; the most recent
runs that are not live below them, dimmed.

Keys: ↑/↓ or k/j select a run; Enter follows its transcript as
'runr logs --follow' does (Esc or q goes back); s asks to stop the selected
run and, on y, does what 'runr stop' does (the run stops after its current
tick, exit 130); q quits and leaves every run running; ? shows the keys.

It needs a terminal on stdin and stdout; elsewhere use 'runr status' and
'runr logs --follow'. NO_COLOR and --no-color turn colour off.`,
		Example:           `  runr watch`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.InTTY = stdinTTY(opts.IO)
			if runF != nil {
				return runF(opts)
			}
			return watchRun(opts)
		},
	}
}

func stdinTTY(ios *IOStreams) bool {
	f, ok := ios.In.(*os.File)
	return ok && isTerminal(f)
}

func watchRun(opts *WatchOptions) error {
	if !opts.IO.OutTTY || !opts.InTTY {
		return stopreasons.Errorf(stopreasons.UsageError,
			"runr watch needs a terminal on stdin and stdout; without one, list the runs with 'runr status' (--json for scripts) and stream one with 'runr logs <id> --follow'")
	}
	store, err := opts.Store()
	if err != nil {
		return err
	}
	src := watch.NewSource(store)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	return watch.Show(ctx, opts.IO.In, opts.IO.Out, watch.Options{
		Source: src,
		Color:  !opts.IO.NoColor,
		Stop: func(id string) (string, error) {
			// `runr stop <id>` itself; what it prints becomes the
			// dashboard's notice instead of reaching the screen.
			var out bytes.Buffer
			err := stopRun(&StopOptions{IO: &IOStreams{In: opts.IO.In, Out: &out, Err: &out, NoColor: true}, Store: opts.StopStore, Ref: id})
			return strings.TrimSpace(out.String()), err
		},
	})
}
