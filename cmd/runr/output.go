package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/report"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// printSummary writes the end-of-run summary: reason, title, category,
// the diagnosis, the exact next commands, the exit code; cfg, the run's
// config (nil when unknown), says whether its work was committed.
func printSummary(io *IOStreams, store *state.Store, st *state.State, cfg *config.Config) {
	p := io.OutPainter()
	w := io.Out
	r := st.StopReason
	reg, known := stopreasons.Lookup(r.Code)
	title := string(r.Code)
	if known {
		title = reg.Title
	}
	head := fmt.Sprintf("%s %s", r.Code, "· "+title)
	fmt.Fprintf(w, "\nrunr: run %s stopped: %s\n", st.RunID, categoryPaint(p, stopreasons.Category(r.Category), head))
	fmt.Fprintf(w, "  %s · %s · exit %d\n", r.Category, r.TerminalStatus, r.ExitCode)
	rep, err := report.Diagnose(st, store.RunDir(st.RunID))
	if err == nil && rep.Diagnosis != "" {
		fmt.Fprintf(w, "  %s\n", termtext.Visible(rep.Diagnosis))
	} else if r.Message != "" {
		fmt.Fprintf(w, "  %s\n", termtext.Visible(r.Message))
	}
	if err == nil && len(rep.Evidence.Files) > 0 {
		fmt.Fprintf(w, "  files: %s\n", stopreasons.ShowFiles(rep.Evidence.Files, rep.Evidence.FilesOmitted))
	}
	s := st.Statistics
	fmt.Fprintf(w, "  %s approved of %d · %s · %s · elapsed %s", stopreasons.Plural(s.Approved, "milestone"), s.TotalMilestones,
		stopreasons.Plural(st.Tick, "tick"), stopreasons.Plural(st.Iteration, "iteration"), stopreasons.Duration(time.Duration(st.ElapsedMS)*time.Millisecond))
	if st.Usage.CostUSD > 0 {
		fmt.Fprintf(w, " · $%.2f", st.Usage.CostUSD)
	}
	fmt.Fprintln(w)
	switch {
	case st.Parallel != nil && st.Branch != "":
		printParallel(w, st)
	case st.Branch != "":
		fmt.Fprintf(w, "  worktree %s (branch %s)\n", shownPath(st.Worktree), termtext.VisibleLine(st.Branch))
	}
	printSwitches(w, st)
	if err == nil {
		for _, a := range rep.NextActions {
			fmt.Fprintf(w, "  $ %s\n", termtext.VisibleLine(a))
		}
	}
	printUncommitted(io, st, cfg)
	fmt.Fprintf(w, "  details: runr doctor %s\n", st.RunID)
}

// printParallel says where a parallel run's result is: the integration
// branch, and on completion how to take it into the user's branch.
func printParallel(w io.Writer, st *state.State) {
	branch := termtext.VisibleLine(st.Branch)
	merged := 0
	for _, m := range st.Milestones {
		if m.Status == state.MilestoneApproved {
			merged++
		}
	}
	fmt.Fprintf(w, "  integration branch %s: %d of %s merged and verified\n", branch, merged, stopreasons.Plural(len(st.Milestones), "milestone"))
	if st.StopReason != nil && st.StopReason.Code == stopreasons.Complete {
		fmt.Fprintf(w, "  take the result: git merge %s\n", branch)
	} else if st.Worktree != "" {
		fmt.Fprintf(w, "  worktrees kept for inspection under %s\n", shownPath(filepath.Dir(st.Worktree)))
	}
}

// printUncommitted ends the summary of a completed run that left its work
// uncommitted (checkpoint.commit off): where the changes are and how to
// commit them. The files dirty before the run (the task, the config) are
// not the run's changes.
func printUncommitted(io *IOStreams, st *state.State, cfg *config.Config) {
	if cfg == nil || cfg.Checkpoint.Commit || st.Branch != "" || st.StopReason.Code != stopreasons.Complete {
		return
	}
	dir := st.Repo
	if st.Worktree != "" {
		dir = st.Worktree
	}
	paths := st.Uncommitted
	if paths == nil {
		changes, err := guard.Changes(context.Background(), dir)
		if err != nil {
			return
		}
		for _, c := range changes {
			paths = append(paths, c.Path)
		}
	}
	n := 0
	for _, p := range paths {
		if !slices.Contains(st.StartChanges, p) {
			n++
		}
	}
	if n == 0 {
		return
	}
	w := io.Out
	fmt.Fprintf(w, "  the changes (%s) are left uncommitted in %s (checkpoint.commit is off); review and commit them:\n", stopreasons.Plural(n, "file"), shownPath(dir))
	fmt.Fprintf(w, "  $ %s\n", commitCommand(dir))
}

// commitCommand commits every change of the checkout dir, from the
// working directory or elsewhere.
func commitCommand(dir string) string {
	if wd, err := os.Getwd(); err == nil {
		if top, err := topLevel(wd); err == nil && top == dir {
			return "git add -A && git commit"
		}
	}
	q := stopreasons.ShellQuote(dir)
	return fmt.Sprintf("git -C %s add -A && git -C %s commit", q, q)
}

// runSummary is the --json summary of a stopped run.
func runSummary(store *state.Store, st *state.State) map[string]any {
	out := map[string]any{
		"run_id":      st.RunID,
		"run_status":  st.RunStatus,
		"stop_reason": st.StopReason,
		"exit_code":   st.StopReason.ExitCode,
		"statistics":  st.Statistics,
		"tick":        st.Tick,
		"iteration":   st.Iteration,
		"elapsed_ms":  st.ElapsedMS,
		"usage":       st.Usage,
		"run_dir":     store.RunDir(st.RunID),
		"resumable":   st.Resumable,
	}
	if st.Worktree != "" {
		out["worktree"] = st.Worktree
		out["branch"] = st.Branch
	}
	used := st.AgentsUsed()
	if used == nil {
		used = []state.AgentRef{}
	}
	out["agents"] = used
	if len(st.AgentSwitches) > 0 {
		out["agent_switches"] = st.AgentSwitches
	}
	if rep, err := report.Diagnose(st, store.RunDir(st.RunID)); err == nil {
		out["diagnosis"] = rep.Diagnosis
		out["next_actions"] = nonNil(rep.NextActions)
	}
	return out
}

// printSwitches lists the run's switches to a fallback agent, one a line:
// "agent    switched from claude to codex at tick 3: rate limited until ...".
func printSwitches(w io.Writer, st *state.State) {
	for i, sw := range st.AgentSwitches {
		key := ""
		if i == 0 {
			key = "agent"
		}
		fmt.Fprintf(w, "  %-8s %s\n", key, termtext.VisibleLine(sw.String()))
	}
}
