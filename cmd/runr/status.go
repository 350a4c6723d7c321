package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
	"github.com/runr-dev/runr/internal/watch"
)

// StatusOptions are the parsed arguments of `runr status`.
type StatusOptions struct {
	IO    *IOStreams
	Store func() (*state.Store, error)
	Ref   string
	JSON  bool

	// Filters of the list; combinable.
	Active bool             // live runs only
	Last   int              // the N newest of the runs left by the others; 0: all
	Reason stopreasons.Code // runs stopped with this reason
}

// filtered says whether a filter of the list was given.
func (o *StatusOptions) filtered() bool { return o.Active || o.Last > 0 || o.Reason != "" }

// NewCmdStatus builds `runr status`; runF, when a test passes one, gets the
// parsed options instead of statusRun.
func NewCmdStatus(f *Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IO, Store: f.StoreRead}
	var reason string
	cmd := &cobra.Command{
		Use:   "status [<id>|latest]",
		Short: "Show runs at a glance, or one run in detail",
		Long: `Without an argument, list the runs of this repository: id, stop reason,
exit code, ticks, milestones approved, elapsed time, start, status. A run whose state
says running but whose runr process is gone is shown as crashed.
With a run id (or latest), show that run in detail, with how close each stop
rule is to firing.

--active lists only live runs, --reason CODE only the runs that stopped with
that reason, --last N only the N newest of those; they combine.`,
		Example: `  runr status --active
  runr status --reason verification_failed --last 5 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Lookup("last").Changed && opts.Last < 1 {
				return stopreasons.Errorf(stopreasons.UsageError, "--last %d: give a number of runs, 1 or more", opts.Last)
			}
			if reason != "" {
				code, err := reasonCode(reason)
				if err != nil {
					return err
				}
				opts.Reason = code
			}
			if len(args) == 1 && opts.filtered() {
				return stopreasons.Errorf(stopreasons.UsageError, "--active, --last and --reason filter the list of runs: give them without a run id")
			}
			if len(args) == 1 {
				// `runr status ''` is a mistake, not a request for the list.
				if err := state.CheckRef(args[0]); err != nil {
					return err
				}
				opts.Ref = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return statusRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.JSON, "json", false, "print JSON")
	fl.BoolVar(&opts.Active, "active", false, "only the live runs")
	fl.IntVar(&opts.Last, "last", 0, "only the N newest runs (after the other filters)")
	fl.StringVar(&reason, "reason", "", "only the runs stopped with this reason code (see runr reasons)")
	return cmd
}

// reasonCode is a stop reason code given on the command line; an unknown one
// is a usage error naming the codes it looks like, or where to find them.
func reasonCode(s string) (stopreasons.Code, error) {
	if _, ok := stopreasons.Lookup(stopreasons.Code(s)); ok {
		return stopreasons.Code(s), nil
	}
	msg := fmt.Sprintf("--reason %q is no stop reason", termtext.VisibleLine(s))
	if near := closestCodes(s); len(near) > 0 {
		msg += "; did you mean " + strings.Join(near, ", ") + "?"
	}
	return "", stopreasons.Errorf(stopreasons.UsageError, "%s (run 'runr reasons' for the list)", msg)
}

// closestCodes are up to three stop reason codes s looks like.
func closestCodes(s string) []string {
	var codes []string
	for _, r := range stopreasons.All() {
		codes = append(codes, string(r.Code))
	}
	return config.Closest(s, codes, 3)
}

// runView is one run as status shows it.
type runView struct {
	RunID      string                `json:"run_id"`
	Status     string                `json:"status"`
	Reason     string                `json:"reason,omitempty"`
	ExitCode   *int                  `json:"exit_code,omitempty"`
	Tick       int                   `json:"tick"`
	Approved   int                   `json:"approved"`
	Milestones int                   `json:"milestones"`
	ElapsedMS  int64                 `json:"elapsed_ms"`
	CreatedAt  time.Time             `json:"created_at"`
	Error      string                `json:"error,omitempty"`
	State      *state.State          `json:"state,omitempty"`
	Lock       *state.LockInfo       `json:"lock,omitempty"`
	Conditions []state.ConditionProg `json:"-"`
}

func viewOf(store *state.Store, st *state.State) runView {
	var code stopreasons.Code
	if st.StopReason != nil {
		code = st.StopReason.Code
	}
	return summaryView(store, &state.Summary{RunID: st.RunID, RunStatus: st.RunStatus, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt,
		ElapsedMS: st.ElapsedMS, Tick: st.Tick, Approved: countApproved(st), Milestones: len(st.Milestones), Stop: code})
}

func summaryView(store *state.Store, sum *state.Summary) runView {
	v := runView{
		RunID:      sum.RunID,
		Status:     store.LiveStatus(sum.RunID, sum.RunStatus),
		Tick:       sum.Tick,
		Approved:   sum.Approved,
		Milestones: sum.Milestones,
		ElapsedMS:  sum.ElapsedMS,
		CreatedAt:  sum.CreatedAt,
	}
	if v.Status == stopreasons.RunRunning {
		// state.json records the elapsed time at its saves, a tick apart:
		// a live run's time goes on counting in between.
		live, info, err := store.Locked(sum.RunID)
		v.ElapsedMS = state.Elapsed(sum.ElapsedMS, sum.UpdatedAt, err == nil && live, info.StartedAt, time.Now()).Milliseconds()
	}
	if sum.Stop != "" && v.Status != stopreasons.RunRunning && v.Status != stopreasons.RunCrashed {
		v.Reason = string(sum.Stop)
		code := stopreasons.ExitCode(sum.Stop)
		v.ExitCode = &code
	}
	return v
}

func countApproved(st *state.State) int {
	n := 0
	for _, m := range st.Milestones {
		if m.Status == state.MilestoneApproved {
			n++
		}
	}
	return n
}

// statusRun lists the runs from the head of each state.json (Store.Summary),
// never decoding their history, and writes the list in one buffered pass:
// a store of a thousand long runs lists as fast as one of short ones.
func statusRun(opts *StatusOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	store.Sweep(time.Now())
	if opts.Ref != "" {
		return statusOne(opts, store)
	}
	ids, err := store.List()
	if err != nil {
		return err
	}
	views := listViews(store, ids, opts)
	if opts.JSON {
		return writeJSON(opts.IO.Out, views)
	}
	if len(views) == 0 {
		if opts.filtered() {
			fmt.Fprintln(opts.IO.Out, "No run matches.")
		} else {
			fmt.Fprintln(opts.IO.Out, "No runs yet. Start one with: runr run --task TASK.md -- AGENT...")
		}
		return nil
	}
	p := opts.IO.OutPainter()
	out := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tREASON\tEXIT\tTICKS\tMILESTONES\tELAPSED\tSTARTED\tSTATUS")
	for _, v := range views {
		exit := "-"
		if v.ExitCode != nil {
			exit = strconv.Itoa(*v.ExitCode)
		}
		// The code and status come from a state.json an agent can write.
		reason := termtext.VisibleLine(v.Reason)
		if reason == "" {
			reason = "-"
		}
		started := "-"
		if !v.CreatedAt.IsZero() {
			started = v.CreatedAt.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", v.RunID, reason, exit, v.Tick, v.Approved, v.Milestones,
			stopreasons.Duration(time.Duration(v.ElapsedMS)*time.Millisecond), started, statusPaint(p, termtext.VisibleLine(v.Status)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

// listViews reads the runs ids (oldest first) that the filters of opts
// keep, oldest first. With --last it reads from the newest back and stops
// once it has N; with --active it reads the summary of a live run only.
func listViews(store *state.Store, ids []string, opts *StatusOptions) []runView {
	var views []runView
	for i := len(ids) - 1; i >= 0; i-- {
		if opts.Last > 0 && len(views) == opts.Last {
			break
		}
		id := ids[i]
		if opts.Active {
			if live, _, err := store.Locked(id); err != nil || !live {
				continue
			}
		}
		var v runView
		if sum, err := store.Summary(id); err != nil {
			v = runView{RunID: id, Status: "unreadable", Error: err.Error()}
		} else {
			v = summaryView(store, sum)
		}
		if opts.Active && v.Status != stopreasons.RunRunning || opts.Reason != "" && v.Reason != string(opts.Reason) {
			continue
		}
		views = append(views, v)
	}
	slices.Reverse(views)
	if views == nil {
		views = []runView{}
	}
	return views
}

func statusPaint(p Painter, status string) string {
	switch status {
	case stopreasons.RunCompleted:
		return p.Green(status)
	case stopreasons.RunRunning:
		return p.Cyan(status)
	case stopreasons.RunStopped:
		return p.Yellow(status)
	default:
		return p.Red(status)
	}
}

func statusOne(opts *StatusOptions, store *state.Store) error {
	st, err := loadRun(store, opts.Ref)
	if err != nil {
		return err
	}
	v := viewOf(store, st)
	if live, info, err := store.Locked(st.RunID); err == nil && live {
		v.Lock = &info
	}
	if opts.JSON {
		v.State = st
		return writeJSON(opts.IO.Out, v)
	}
	p := opts.IO.OutPainter()
	w := opts.IO.Out
	fmt.Fprintf(w, "%s %s\n", p.Bold("Run "+st.RunID), statusPaint(p, v.Status))
	if v.Status == stopreasons.RunCrashed {
		fmt.Fprintf(w, "  its runr process is gone; continue with: runr resume %s\n", st.RunID)
	}
	if v.Lock != nil {
		fmt.Fprintf(w, "  held by pid %d on %s since %s\n", v.Lock.PID, termtext.VisibleLine(v.Lock.Host), v.Lock.StartedAt.Local().Format(time.RFC3339))
	}
	if r := st.StopReason; r != nil && v.Reason != "" {
		fmt.Fprintf(w, "  stopped: %s (exit %d) · %s\n", termtext.VisibleLine(string(r.Code)), stopreasons.ExitCode(r.Code), termtext.Visible(r.Message))
	}
	fmt.Fprintf(w, "  repo     %s\n", shownPath(st.Repo))
	if st.Worktree != "" {
		fmt.Fprintf(w, "  worktree %s\n  branch   %s\n", shownPath(st.Worktree), termtext.VisibleLine(st.Branch))
	}
	if st.Task.File != "" {
		fmt.Fprintf(w, "  task     %s\n", shownPath(repoPath(st.Repo, st.Task.File)))
	}
	budget := time.Duration(st.Budget.TimeMS) * time.Millisecond
	fmt.Fprintf(w, "  phase    %s · tick %d · iteration %d · elapsed %s of %s\n", st.Phase, st.Tick, st.Iteration,
		stopreasons.Duration(time.Duration(v.ElapsedMS)*time.Millisecond), stopreasons.Duration(budget))
	if st.Usage.CostUSD > 0 || st.Usage.InputTokens > 0 {
		fmt.Fprintf(w, "  usage    $%.2f · %d input / %d output tokens\n", st.Usage.CostUSD, st.Usage.InputTokens, st.Usage.OutputTokens)
	}
	printSwitches(w, st)
	fmt.Fprintf(w, "\nMilestones (%d/%d approved):\n", v.Approved, v.Milestones)
	for i, m := range st.Milestones {
		marker := " "
		if i == st.MilestoneIndex && v.Reason == "" {
			marker = ">"
		}
		fmt.Fprintf(w, "  %s %d. [%s] %s (%s)\n", marker, i+1, m.Status, termtext.VisibleLine(m.Goal), stopreasons.Plural(m.AttemptCount(), "attempt"))
	}
	printWorkers(w, st)
	if rules := stopRules(store, st, v); len(rules) > 0 {
		fmt.Fprintln(w, "\nStop rules (how close each is to firing):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, c := range rules {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", termtext.VisibleLine(c.Name), bar(c.Progress, opts.IO.OutTTY), termtext.VisibleLine(c.Message))
		}
		tw.Flush()
	}
	return nil
}

// stopRules are the stop rules of run st, closest to firing first. A live
// run's are judged now, as watch judges them: what it recorded is as old
// as its last tick, and nothing before its first tick ends. Any other run
// shows what it recorded.
func stopRules(store *state.Store, st *state.State, v runView) []watch.Rule {
	var rules []watch.Rule
	if v.Lock != nil {
		rules = watch.LiveRules(store.RunDir(st.RunID), st, time.Duration(v.ElapsedMS)*time.Millisecond)
	} else {
		for _, c := range st.Conditions {
			rules = append(rules, watch.Rule{Name: c.Name, Progress: c.Progress, Message: c.Message})
		}
	}
	slices.SortStableFunc(rules, func(a, b watch.Rule) int { return cmp.Compare(b.Progress, a.Progress) })
	return rules
}

// printWorkers lists a parallel run's workers: what each works on now, and
// the merge queue.
func printWorkers(w io.Writer, st *state.State) {
	p := st.Parallel
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\nWorkers (%d; integration branch %s):\n", p.Workers, termtext.VisibleLine(p.Branch))
	for _, s := range st.Workers {
		if s.Milestone == 0 {
			fmt.Fprintf(w, "  worker %d  idle\n", s.Worker)
			continue
		}
		goal := ""
		if s.Milestone <= len(st.Milestones) {
			goal = st.Milestones[s.Milestone-1].Goal
		}
		fmt.Fprintf(w, "  worker %d  milestone %d (%s) · %s · branch %s", s.Worker, s.Milestone, termtext.VisibleLine(goal),
			termtext.VisibleLine(s.Phase), termtext.VisibleLine(s.Branch))
		if s.Requeues > 0 {
			fmt.Fprintf(w, " · requeued %d×", s.Requeues)
		}
		fmt.Fprintf(w, " · since %s\n", termtext.VisibleLine(s.StartedAt))
	}
	if len(st.Workers) == 0 {
		fmt.Fprintln(w, "  none at work")
	}
	if len(p.MergeQueue) > 0 {
		fmt.Fprintf(w, "  merge queue: milestone(s) %v\n", p.MergeQueue)
	}
}

// bar draws a progress bar on a terminal and a percentage elsewhere.
func bar(f float64, tty bool) string {
	f = max(0, min(1, f))
	pct := fmt.Sprintf("%3.0f%%", f*100)
	if !tty {
		return pct
	}
	const width = 20
	n := int(f*width + 0.5)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "] " + pct
}
