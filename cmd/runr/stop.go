package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// StopOptions are the parsed arguments of `runr stop`.
type StopOptions struct {
	IO    *IOStreams
	Store func() (*state.Store, error)
	Ref   string // "" stops the one live run of the store
}

// NewCmdStop builds `runr stop`; runF, when a test passes one, gets the
// parsed options instead of stopRun.
func NewCmdStop(f *Factory, runF func(*StopOptions) error) *cobra.Command {
	opts := &StopOptions{IO: f.IO, Store: f.Store}
	return &cobra.Command{
		Use:   "stop [<id>|latest]",
		Short: "Ask a live run to stop after its current tick",
		Long: `Write a stop request for a live run. The run finishes its current tick, then
stops with user_stopped (exit 130); 'runr resume' continues it later.

With no run id it stops the one live run of the store; when none or several
are live it exits 64 and lists the live runs.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Ref = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return stopRun(opts)
		},
	}
}

func stopRun(opts *StopOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	var id string
	if opts.Ref == "" {
		id, err = theLiveRun(store)
	} else {
		id, err = store.Resolve(opts.Ref)
	}
	if err != nil {
		return err
	}
	live, info, err := store.Locked(id)
	if err != nil {
		return err
	}
	if !live {
		status := "not live"
		if st, err := store.Load(id); err == nil {
			status = store.DisplayStatus(st)
		}
		fmt.Fprintf(opts.IO.Out, "Run %s is not live (%s): nothing to stop.\n", id, status)
		return nil
	}
	if err := store.RequestStop(id, "runr stop"); err != nil {
		return stopreasons.Wrap(stopreasons.InternalError, err, "write the stop request of run %s", id)
	}
	fmt.Fprintf(opts.IO.Out, "Asked run %s (pid %d) to stop after its current tick.\n", id, info.PID)
	return nil
}

// theLiveRun is the id of the one live run of the store, found as
// `runr status --active` finds live runs; none or several live is a usage
// error that lists them, since which run to stop is then the user's choice.
func theLiveRun(store *state.Store) (string, error) {
	ids, err := store.List()
	if err != nil {
		return "", err
	}
	var live []string
	for _, v := range listViews(store, ids, &StatusOptions{Active: true}) {
		live = append(live, v.RunID)
	}
	switch len(live) {
	case 1:
		return live[0], nil
	case 0:
		return "", stopreasons.Errorf(stopreasons.UsageError, "no live run in the store %s: nothing to stop; 'runr status' lists the runs", shownPath(store.Home))
	default:
		return "", stopreasons.Errorf(stopreasons.UsageError, "%d runs are live: %s; name the one to stop: runr stop <id>", len(live), strings.Join(live, ", "))
	}
}
