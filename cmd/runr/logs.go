package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/report"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// followPoll is how often `runr logs --follow` looks for new events.
const followPoll = 200 * time.Millisecond

// maxTranscriptEvent bounds one timeline line read by `runr logs`.
const maxTranscriptEvent = 1 << 20

// LogsOptions are the parsed arguments of `runr logs`.
type LogsOptions struct {
	IO     *IOStreams
	Global *GlobalOptions
	Store  func() (*state.Store, error)
	Ref    string
	Follow bool
	Tick   int
	Raw    bool
	// Worker shows a parallel run's worker K: the runs of the milestones
	// it worked, in order.
	Worker int
}

// NewCmdLogs builds `runr logs`; runF, when a test passes one, gets the
// parsed options instead of logsRun.
func NewCmdLogs(f *Factory, runF func(*LogsOptions) error) *cobra.Command {
	opts := &LogsOptions{IO: f.IO, Global: f.Global, Store: f.StoreRead}
	cmd := &cobra.Command{
		Use:   "logs [<id>|latest]",
		Short: "Show a run as a readable transcript, tick by tick",
		Long: `The run as a transcript, tick by tick: the milestone, what the agent did
(its tool calls, failed tools and short messages), each process's exit,
the end of a failed check's output, each tick's outcome, and the stop.
Works on a finished run, a live one and one that crashed.

--follow streams a live run until it stops. --tick N shows that tick only.
--raw prints the agent's own output for a tick (the last agent call without
--tick) as it was recorded: byte for byte when stdout is not a terminal,
with control characters made visible when it is.`,
		Example: `  runr logs latest
  runr logs latest --follow
  runr logs 20261121T230017Z-3f9a1c --tick 4 --raw > tick4.log`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = "latest"
			if len(args) == 1 {
				opts.Ref = args[0]
			}
			if opts.Tick < 0 {
				return stopreasons.Errorf(stopreasons.UsageError, "--tick %d: a tick is a number from 1", opts.Tick)
			}
			if opts.Worker < 0 {
				return stopreasons.Errorf(stopreasons.UsageError, "--worker %d: a worker is a number from 1", opts.Worker)
			}
			if opts.Worker > 0 && opts.Follow {
				return stopreasons.Errorf(stopreasons.UsageError, "--worker and --follow cannot be used together: follow the run, whose lines name their worker")
			}
			if opts.Raw && opts.Follow {
				return stopreasons.Errorf(stopreasons.UsageError, "--raw and --follow cannot be used together: --raw prints one tick's recorded output")
			}
			if runF != nil {
				return runF(opts)
			}
			return logsRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "stream a live run until it stops")
	fl.IntVar(&opts.Tick, "tick", 0, "show this tick only")
	fl.BoolVar(&opts.Raw, "raw", false, "print the agent's own output for the tick as recorded")
	fl.IntVar(&opts.Worker, "worker", 0, "a parallel run: show worker K's milestones (--tick and --raw then count within its last one)")
	return cmd
}

func logsRun(opts *LogsOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	st, err := loadRun(store, opts.Ref)
	if err != nil {
		return err
	}
	runDir := store.RunDir(st.RunID)
	if opts.Worker > 0 {
		return workerLogs(opts, st, runDir)
	}
	if p := st.Parallel; p != nil && p.Workers > 1 && (opts.Tick > 0 || opts.Raw) {
		// A parallel run's ticks, and its agents' output, are its
		// workers': its own timeline holds only the merges.
		return stopreasons.Errorf(stopreasons.UsageError, "run %s is a parallel run: its ticks and its agents' output are its workers'; name one: runr logs %s --worker K (1 to %d) with --tick or --raw",
			st.RunID, st.RunID, p.Workers)
	}
	if opts.Raw {
		return rawLog(opts.IO, runDir, st.RunID, opts.Tick)
	}

	out := bufio.NewWriter(opts.IO.Out)
	defer out.Flush()
	tr := report.NewTranscript(out, st, runDir, opts.Tick)
	follower := state.FollowTimeline(store.TimelinePath(st.RunID), maxTranscriptEvent)
	defer follower.Close()
	stopped := false
	poll := func() error {
		err := follower.Poll(func(ev state.Event) error {
			tr.Event(ev)
			switch ev.Data.(type) {
			case state.StopEvent:
				stopped = true
			case state.RunStartedEvent, state.RunResumedEvent:
				stopped = false
			}
			return tr.Err()
		})
		if err != nil {
			return stopreasons.Wrap(stopreasons.StateCorrupt, err, "read the timeline of run %s", st.RunID)
		}
		return out.Flush()
	}
	if err := poll(); err != nil {
		return err
	}
	if !opts.Follow {
		return endNote(out, store, st.RunID, stopped)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		// Read the lock before the events: a run that stops between the
		// two has written its stop by then.
		live, _, _ := store.Locked(st.RunID)
		if err := poll(); err != nil {
			return err
		}
		if !live {
			return endNote(out, store, st.RunID, stopped)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// workerLogs shows the runs worker K of a parallel run made, one per
// milestone it took, oldest first: each one's transcript, or with --raw the
// recorded output of the last one.
func workerLogs(opts *LogsOptions, st *state.State, runDir string) error {
	if st.Parallel == nil {
		return stopreasons.Errorf(stopreasons.UsageError, "--worker %d: run %s is not a parallel run (runr run --parallel N)", opts.Worker, st.RunID)
	}
	if opts.Worker > st.Parallel.Workers {
		return stopreasons.Errorf(stopreasons.UsageError, "--worker %d: run %s has %s", opts.Worker, st.RunID, stopreasons.Plural(st.Parallel.Workers, "worker"))
	}
	home := filepath.Join(runDir, "workers", fmt.Sprintf("w%d", opts.Worker))
	var ids []string
	if _, err := os.Stat(home); err == nil {
		ws, err := state.OpenRead(home)
		if err != nil {
			return err
		}
		if ids, err = ws.List(); err != nil {
			return err
		}
		out := bufio.NewWriter(opts.IO.Out)
		defer out.Flush()
		if opts.Raw && len(ids) > 0 {
			last := ids[len(ids)-1]
			return rawLog(opts.IO, ws.RunDir(last), last, opts.Tick)
		}
		for _, id := range ids {
			child, err := ws.Load(id)
			if err != nil {
				return err
			}
			// The milestone it worked: the others count as approved there
			// without an attempt.
			m := min(child.MilestoneIndex+1, len(child.Milestones))
			for i, cm := range child.Milestones {
				if cm.AttemptCount() > 0 || cm.Status != state.MilestoneApproved {
					m = i + 1
					break
				}
			}
			fmt.Fprintf(out, "== worker %d · milestone %d · %s\n", opts.Worker, m, id)
			tr := report.NewTranscript(out, child, ws.RunDir(id), opts.Tick)
			if id == ids[len(ids)-1] {
				tr.Raw = func(tick int) string {
					return fmt.Sprintf("runr logs %s --worker %d --tick %d --raw", st.RunID, opts.Worker, tick)
				}
			} else {
				// Only the worker's last milestone is reached by a
				// command: an earlier one's log is named by its path.
				dir := ws.RunDir(id)
				tr.Raw = func(tick int) string {
					return relToWD(state.RunLogPath(dir, tick, state.PhaseImplement))
				}
			}
			follower := state.FollowTimeline(ws.TimelinePath(id), maxTranscriptEvent)
			err = follower.Poll(func(ev state.Event) error {
				tr.Event(ev)
				return tr.Err()
			})
			follower.Close()
			if err != nil {
				return stopreasons.Wrap(stopreasons.StateCorrupt, err, "read the timeline of worker %d's run %s", opts.Worker, id)
			}
			fmt.Fprintln(out)
		}
	}
	if len(ids) == 0 {
		fmt.Fprintf(opts.IO.Out, "worker %d of run %s has worked on no milestone yet\n", opts.Worker, st.RunID)
	}
	return nil
}

// endNote says, after a transcript without a stop, whether the run is live
// or was cut short.
func endNote(w io.Writer, store *state.Store, id string, stopped bool) error {
	if stopped {
		return nil
	}
	if live, _, _ := store.Locked(id); live {
		_, err := fmt.Fprintf(w, "\nthe run is live: runr logs %s --follow\n", id)
		return err
	}
	_, err := fmt.Fprintf(w, "\nno stop is recorded and no runr holds the run: it crashed or was killed.\n  $ runr doctor %s\n  $ runr resume %s\n", id, id)
	return err
}

// rawLog prints the agent's log of a tick (of the last agent call when tick
// is 0), byte for byte unless stdout is a terminal.
func rawLog(ios *IOStreams, runDir, id string, tick int) error {
	path, err := tickLog(runDir, id, tick)
	if err != nil {
		return err
	}
	f, err := state.OpenRecord(path)
	if err != nil {
		return stopreasons.Wrap(stopreasons.StateCorrupt, err, "open %s", shownPath(path))
	}
	defer f.Close()
	if !ios.OutTTY {
		_, err = io.Copy(ios.Out, f)
		return err
	}
	out := bufio.NewWriter(ios.Out)
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			if _, werr := out.WriteString(termtext.Visible(string(chunk))); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return out.Flush()
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// tickLog finds the log of a tick: the agent's (implement) when the tick
// ran it, else the tick's only log. tick 0 is the last agent call.
func tickLog(runDir, id string, tick int) (string, error) {
	dir := filepath.Join(runDir, "logs")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", stopreasons.Wrap(stopreasons.StateCorrupt, err, "read %s", shownPath(dir))
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), "tick-") && strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	// By tick number: tick-10000 comes after tick-9999.
	sort.Slice(names, func(i, j int) bool {
		a, b := logTick(names[i]), logTick(names[j])
		if a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	if tick == 0 {
		for i := len(names) - 1; i >= 0; i-- {
			if strings.HasSuffix(names[i], "-"+state.PhaseImplement+".log") {
				return filepath.Join(dir, names[i]), nil
			}
		}
		return "", stopreasons.Errorf(stopreasons.UsageError, "run %s has no agent output recorded yet", id)
	}
	prefix := fmt.Sprintf("tick-%04d-", tick)
	var match string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && (match == "" || strings.HasSuffix(n, "-"+state.PhaseImplement+".log")) {
			match = n
		}
	}
	if match == "" {
		return "", stopreasons.Errorf(stopreasons.UsageError, "run %s has no output recorded for tick %d: `runr logs %s` lists its ticks", id, tick, id)
	}
	return filepath.Join(dir, match), nil
}

// logTick is the tick number of a log's name (tick-0042-verify.log), -1
// when it has none.
func logTick(name string) int {
	rest, ok := strings.CutPrefix(name, "tick-")
	if !ok {
		return -1
	}
	digits, _, _ := strings.Cut(rest, "-")
	n, err := strconv.Atoi(digits)
	if err != nil {
		return -1
	}
	return n
}
