package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/termtext"
)

// defaultPruneAge is how long a stopped run is kept by default.
const defaultPruneAge = 30 * 24 * time.Hour

// PruneOptions are the parsed arguments of `runr prune`.
type PruneOptions struct {
	IO       *IOStreams
	Store    func() (*state.Store, error)
	RepoRoot func() (string, error)

	OlderThan time.Duration
	Keep      int
	Branches  bool
	DryRun    bool
	JSON      bool
}

// NewCmdPrune builds `runr prune`; runF, when a test passes one, gets the
// parsed options instead of pruneRun.
func NewCmdPrune(f *Factory, runF func(*PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{IO: f.IO, Store: f.Store, RepoRoot: f.RepoRoot}
	var olderThan string
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove old stopped runs and their worktrees",
		Long: `Remove the runs that stopped more than --older-than ago (default 30d), with
their worktrees (git forgets them too). A live run is never removed; a
crashed run goes once its last update is that old. --keep N keeps the N
newest runs whatever their age. Branches runr/<id> stay unless --branches.
A worktree with uncommitted changes or untracked files is never removed:
its run is kept, and the reason printed. --dry-run lists what would go and
removes nothing.`,
		Example: `  runr prune --dry-run
  runr prune --older-than 7d --keep 10
  runr prune --older-than 1d12h --branches`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.OlderThan = defaultPruneAge
			if cmd.Flags().Lookup("older-than").Changed {
				d, err := parseAge(olderThan)
				if err != nil {
					return stopreasons.Errorf(stopreasons.UsageError, "--older-than %q: %v (e.g. 30d, 36h, 1d12h)", olderThan, err)
				}
				opts.OlderThan = d
			}
			if opts.Keep < 0 {
				return stopreasons.Errorf(stopreasons.UsageError, "--keep %d: give a number of runs, 0 or more", opts.Keep)
			}
			if runF != nil {
				return runF(opts)
			}
			return pruneRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.Var(&typedFlag{value: &olderThan, kind: "duration"}, "older-than", "remove runs stopped longer ago than this: 30d, 36h, 1d12h (default 30d)")
	fl.IntVar(&opts.Keep, "keep", 0, "keep this many of the newest runs whatever their age")
	fl.BoolVar(&opts.Branches, "branches", false, "delete the runs' branches runr/<id> too")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "list what would be removed and remove nothing")
	fl.BoolVar(&opts.JSON, "json", false, "print one JSON object on stdout")
	return cmd
}

var agePart = regexp.MustCompile(`^([0-9]+)d`)

// parseAge reads a duration that may start with whole days: 30d, 1d12h,
// 36h, 90m, 0.
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var d time.Duration
	if m := agePart.FindStringSubmatch(s); m != nil {
		days, err := strconv.Atoi(m[1])
		if err != nil || days > 100*365 {
			return 0, errors.New("too many days")
		}
		d = time.Duration(days) * 24 * time.Hour
		s = s[len(m[0]):]
		if s == "" {
			return d, nil
		}
	}
	rest, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration")
	}
	if rest < 0 {
		return 0, errors.New("a negative duration")
	}
	return d + rest, nil
}

// pruneResult is what the JSON output says about one run.
type pruneResult struct {
	RunID           string `json:"run_id"`
	Status          string `json:"status"`
	Action          string `json:"action"` // removed, would_remove, kept, failed
	Reason          string `json:"reason,omitempty"`
	AgeMS           int64  `json:"age_ms"`
	Worktree        string `json:"worktree,omitempty"`
	WorktreeRemoved bool   `json:"worktree_removed"`
	Branch          string `json:"branch,omitempty"`
	BranchDeleted   bool   `json:"branch_deleted"`
}

// parallelTrees are the worktrees inside a parallel run's directory dir
// (main, w1, w2, ...), none when dir is a worktree itself.
func parallelTrees(dir string) []string {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if name := e.Name(); e.IsDir() && (name == "main" || len(name) > 1 && name[0] == 'w' && strings.Trim(name[1:], "0123456789") == "") {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

func pruneRun(opts *PruneOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	// Worktrees and branches are the business of the repository around
	// the working directory; without one, a run that has either is kept.
	repo, repoErr := opts.RepoRoot()
	p := &pruner{ctx: context.Background(), opts: opts, store: store, repo: repo, repoErr: repoErr,
		outside: map[string]*pruneResult{}}
	items, err := store.Prune(state.PruneRules{OlderThan: opts.OlderThan, Keep: opts.Keep, DryRun: opts.DryRun}, p.hook)
	if err != nil {
		return err
	}

	results, removed, kept, failed := pruneResults(items, p.outside, opts.DryRun)
	if opts.JSON {
		err = writeJSON(opts.IO.Out, map[string]any{
			"dry_run":    opts.DryRun,
			"older_than": state.FormatAge(opts.OlderThan),
			"keep":       opts.Keep,
			"runs":       results,
			"removed":    removed,
			"kept":       kept,
			"failed":     failed,
		})
	} else {
		printPrune(opts, results, removed, kept, failed)
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return stopreasons.Errorf(stopreasons.EnvironmentInvalid, "%s could not be removed (see above); fix what is named and run runr prune again", stopreasons.Plural(failed, "run"))
	}
	return nil
}

// pruner removes, for each run the store prunes, what lies outside the
// store: the run's worktrees and, with --branches, its branches. What it did
// for each run is kept in outside, by run id, for the run's result.
type pruner struct {
	ctx     context.Context
	opts    *PruneOptions
	store   *state.Store
	repo    string
	repoErr error // why there is no repository around the working directory
	outside map[string]*pruneResult
}

// hook is the store's PruneHook: it removes (with dry, checks) the
// worktrees and branches of run id, whose worktree is wt ("" for none), and
// returns why the run must be kept when one of them cannot go.
func (p *pruner) hook(id, wt string, dry bool) (string, error) {
	res := &pruneResult{}
	p.outside[id] = res
	if (wt != "" || p.opts.Branches) && p.repoErr != nil {
		return "its worktree or branch belongs to a git repository: run runr prune inside it", nil
	}
	if wt != "" {
		if keep, err := p.removeWorktrees(wt, dry, res); keep != "" || err != nil {
			return keep, err
		}
	}
	if err := p.deleteBranches(id, wt, dry, res); err != nil {
		return "", err
	}
	return "", nil
}

// removeWorktrees removes the worktree wt, or each worktree inside a
// parallel run's wt; with dry it only checks that they can go. It returns
// why the run must be kept when one of them cannot.
func (p *pruner) removeWorktrees(wt string, dry bool, res *pruneResult) (string, error) {
	res.Worktree = wt
	// A parallel run's directory holds its worktrees: the
	// integration one (main) and one per worker (w<K>).
	trees := parallelTrees(wt)
	if len(trees) == 0 {
		trees = []string{wt}
	}
	for _, tree := range trees {
		var err error
		if dry {
			err = guard.CheckWorktreeRemovable(p.ctx, p.repo, tree)
		} else {
			err = guard.RemoveWorktree(p.ctx, p.repo, tree)
		}
		switch {
		case errors.Is(err, guard.ErrWorktreeDirty):
			return fmt.Sprintf("its worktree has uncommitted changes or untracked files; commit or discard them (git -C %s status), then prune again",
				stopreasons.ShellQuote(tree)), nil
		case errors.Is(err, guard.ErrNotWorktree):
			return fmt.Sprintf("%v; remove it by hand if it is no longer needed", err), nil
		case err != nil:
			return "", err
		}
	}
	if tree := trees[0]; tree != wt && !dry {
		_ = os.Remove(wt)
	}
	res.WorktreeRemoved = !dry
	return "", nil
}

// deleteBranches deletes, with --branches, the branch runr/<id> and a
// parallel run's milestone branches (with dry, only looks for runr/<id>);
// without --branches it notes runr/<id> when the run had a worktree and the
// branch is still there.
func (p *pruner) deleteBranches(id, wt string, dry bool, res *pruneResult) error {
	if p.opts.Branches && p.repoErr == nil {
		// A parallel run's milestones' branches go with it.
		if st, err := p.store.Load(id); err == nil && st.Parallel != nil {
			for n := 1; n <= len(st.Milestones); n++ {
				if dry {
					continue
				}
				if _, err := guard.DeleteBranch(p.ctx, p.repo, guard.MilestoneBranch(id, n)); err != nil {
					return err
				}
			}
		}
	}
	if p.opts.Branches {
		branch := guard.RunBranch(id)
		var ok bool
		var err error
		if dry {
			ok, err = guard.BranchExists(p.ctx, p.repo, branch)
		} else {
			ok, err = guard.DeleteBranch(p.ctx, p.repo, branch)
		}
		if err != nil {
			return err
		}
		if ok {
			res.Branch, res.BranchDeleted = branch, !dry
		}
	} else if wt != "" && p.repoErr == nil {
		if ok, _ := guard.BranchExists(p.ctx, p.repo, guard.RunBranch(id)); ok {
			res.Branch = guard.RunBranch(id)
		}
	}
	return nil
}

// pruneResults turns the store's decisions into the results printed, with
// what the hook did outside the store, and counts the runs removed (with
// dryRun, that would be), kept and failed. A removed run's temporary files
// go with it.
func pruneResults(items []state.PruneItem, outside map[string]*pruneResult, dryRun bool) (results []pruneResult, removed, kept, failed int) {
	results = make([]pruneResult, len(items))
	for i, it := range items {
		r := pruneResult{RunID: it.RunID, Status: it.Status, AgeMS: it.Age.Milliseconds(), Worktree: it.Worktree}
		if o := outside[it.RunID]; o != nil {
			r.WorktreeRemoved, r.Branch, r.BranchDeleted = o.WorktreeRemoved, o.Branch, o.BranchDeleted
		}
		switch {
		case it.Err != nil:
			r.Action, r.Reason = "failed", it.Err.Error()
			failed++
		case it.Removed && dryRun:
			r.Action = "would_remove"
			removed++
		case it.Removed:
			r.Action = "removed"
			removed++
			supervisor.RemoveRunTemps(it.RunID)
		default:
			r.Action, r.Reason = "kept", it.Kept
			kept++
		}
		results[i] = r
	}
	return results, removed, kept, failed
}

func printPrune(opts *PruneOptions, results []pruneResult, removed, kept, failed int) {
	w, p := opts.IO.Out, opts.IO.OutPainter()
	for _, r := range results {
		status := r.Status
		if status == "" {
			status = "unreadable"
		}
		var line string
		switch r.Action {
		case "removed", "would_remove":
			verb := p.Green("removed     ")
			if r.Action == "would_remove" {
				verb = p.Yellow("would remove")
			}
			line = fmt.Sprintf("%s %s  %s, %s ago", verb, r.RunID, status, state.FormatAge(time.Duration(r.AgeMS)*time.Millisecond))
			var notes []string
			if r.Worktree != "" {
				if opts.DryRun {
					notes = append(notes, "worktree "+shownPath(r.Worktree))
				} else {
					notes = append(notes, "worktree removed")
				}
			}
			switch {
			case r.Branch == "":
			case !opts.Branches:
				notes = append(notes, "branch "+r.Branch+" kept")
			case opts.DryRun:
				notes = append(notes, "branch "+r.Branch)
			default:
				notes = append(notes, "branch "+r.Branch+" deleted")
			}
			if len(notes) > 0 {
				line += " (" + strings.Join(notes, ", ") + ")"
			}
		case "failed":
			line = fmt.Sprintf("%s %s  %s: %s", p.Red("failed      "), r.RunID, status, termtext.VisibleLine(r.Reason))
		default:
			verb := "kept        "
			if opts.DryRun {
				verb = "would keep  "
			}
			line = fmt.Sprintf("%s %s  %s: %s", verb, r.RunID, status, termtext.VisibleLine(r.Reason))
		}
		fmt.Fprintln(w, line)
	}
	total := fmt.Sprintf("Removed %s, kept %d", stopreasons.Plural(removed, "run"), kept)
	if opts.DryRun {
		total = fmt.Sprintf("Would remove %s, keep %d (--dry-run: nothing was removed)", stopreasons.Plural(removed, "run"), kept)
	}
	if failed > 0 {
		total += fmt.Sprintf(", %d failed", failed)
	}
	fmt.Fprintln(w, total+".")
}
