package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// StatusOptions are the parsed arguments of `runr status`.
type StatusOptions struct {
	IO    *IOStreams
	Store func() (*state.Store, error)
	Ref   string
	JSON  bool
}

// NewCmdStatus builds `runr status`; runF, when a test passes one, gets the
// parsed options instead of statusRun.
func NewCmdStatus(f *Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IO, Store: f.StoreRead}
	cmd := &cobra.Command{
		Use:   "status [<id>|latest]",
		Short: "Show runs at a glance, or one run in detail",
		Long: `Without an argument, list the runs of this repository: id, stop reason,
exit code, ticks, milestones approved, elapsed time, start, status. A run whose state
says running but whose runr process is gone is shown as crashed.
With a run id (or latest), show that run in detail, with how close each stop
rule is to firing.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
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
	return summaryView(store, &state.Summary{RunID: st.RunID, RunStatus: st.RunStatus, CreatedAt: st.CreatedAt,
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
	views := make([]runView, 0, len(ids))
	for _, id := range ids {
		sum, err := store.Summary(id)
		if err != nil {
			views = append(views, runView{RunID: id, Status: "unreadable", Error: err.Error()})
			continue
		}
		views = append(views, summaryView(store, sum))
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(opts.IO.Out, "No runs yet. Start one with: runr run --task TASK.md -- AGENT...")
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
		reason := v.Reason
		if reason == "" {
			reason = "-"
		}
		started := "-"
		if !v.CreatedAt.IsZero() {
			started = v.CreatedAt.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", v.RunID, reason, exit, v.Tick, v.Approved, v.Milestones,
			(time.Duration(v.ElapsedMS) * time.Millisecond).Round(time.Second), started, statusPaint(p, v.Status))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
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
		fmt.Fprintf(w, "  held by pid %d on %s since %s\n", v.Lock.PID, stopreasons.VisibleLine(v.Lock.Host), v.Lock.StartedAt.Local().Format(time.RFC3339))
	}
	if r := st.StopReason; r != nil && v.Reason != "" {
		fmt.Fprintf(w, "  stopped: %s (exit %d) · %s\n", r.Code, stopreasons.ExitCode(r.Code), stopreasons.Visible(r.Message))
	}
	fmt.Fprintf(w, "  repo     %s\n", stopreasons.VisibleLine(st.Repo))
	if st.Worktree != "" {
		fmt.Fprintf(w, "  worktree %s\n  branch   %s\n", stopreasons.VisibleLine(st.Worktree), stopreasons.VisibleLine(st.Branch))
	}
	if st.Task.File != "" {
		fmt.Fprintf(w, "  task     %s\n", stopreasons.VisibleLine(st.Task.File))
	}
	budget := time.Duration(st.Budget.TimeMS) * time.Millisecond
	fmt.Fprintf(w, "  phase    %s · tick %d · iteration %d · elapsed %s of %s\n", st.Phase, st.Tick, st.Iteration,
		(time.Duration(st.ElapsedMS) * time.Millisecond).Round(time.Second), budget)
	if st.Usage.CostUSD > 0 || st.Usage.InputTokens > 0 {
		fmt.Fprintf(w, "  usage    $%.2f · %d input / %d output tokens\n", st.Usage.CostUSD, st.Usage.InputTokens, st.Usage.OutputTokens)
	}
	fmt.Fprintf(w, "\nMilestones (%d/%d approved):\n", v.Approved, v.Milestones)
	for i, m := range st.Milestones {
		marker := " "
		if i == st.MilestoneIndex && v.Reason == "" {
			marker = ">"
		}
		fmt.Fprintf(w, "  %s %d. [%s] %s (%s)\n", marker, i+1, m.Status, stopreasons.VisibleLine(m.Goal), plural(m.AttemptCount(), "attempt"))
	}
	if len(st.Conditions) > 0 {
		fmt.Fprintln(w, "\nStop rules (how close each is to firing):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, c := range st.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", stopreasons.VisibleLine(c.Name), bar(c.Progress, opts.IO.OutTTY), stopreasons.VisibleLine(c.Message))
		}
		tw.Flush()
	}
	return nil
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
