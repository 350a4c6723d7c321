package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// pruningDir prefixes the hidden name a run directory is renamed to before
// it is deleted (.pruning-<id>-<pid>): once renamed, no runr finds the run,
// so a run is either whole under its id or gone, whatever instant the
// removal is interrupted at. A leftover whose remover died is removed by
// the next Prune.
const pruningDir = ".pruning-"

// PruneRules say which runs Prune removes.
type PruneRules struct {
	// OlderThan: a stopped run goes once this long has passed since it
	// stopped; a crashed run (state says running, lock free) once this
	// long has passed since its state was last written.
	OlderThan time.Duration
	// Keep keeps the Keep newest runs (by creation), whatever their age.
	Keep int
	// DryRun decides and reports, and removes nothing.
	DryRun bool
	// Now is the instant ages are measured at; zero means time.Now().
	Now time.Time
}

// PruneHook is called for every run Prune is about to remove, while Prune
// holds the run's lock (so no runr can resume it meanwhile), with the path
// of the run's worktree (<store>/worktrees/<id>, "" when there is none). It
// removes what lies outside the store (the worktree, the branch). A
// non-empty keep, or an error, keeps the run whole. With dryRun it only
// says whether it would keep the run.
type PruneHook func(id, worktree string, dryRun bool) (keep string, err error)

// PruneItem is Prune's decision about one run.
type PruneItem struct {
	RunID    string
	Status   string        // the run's status (running, completed, stopped, failed, crashed); "" when unreadable
	Age      time.Duration // since it stopped; for a crashed run, since its last update
	Worktree string        // <store>/worktrees/<id> when that directory exists
	Removed  bool          // removed (with DryRun: would be removed)
	Kept     string        // why the run stays, when not Removed
	Err      error         // what stopped its removal, if anything did
}

// Prune removes the runs that PruneRules select, oldest first, and
// returns one item per run of the store, oldest first. A live run (its
// lock held) is never removed, nor a run whose state cannot be read, nor a
// run being created (runs/.creating-*, which is not a run yet). Removal
// never follows a symlink: a symlink planted inside a run directory is
// removed as a link, its target untouched, and a symlink in place of the
// run directory, runs/ or worktrees/ is not a run of this store.
func (s *Store) Prune(r PruneRules, hook PruneHook) ([]PruneItem, error) {
	if r.Now.IsZero() {
		r.Now = time.Now()
	}
	if r.OlderThan < 0 || r.Keep < 0 {
		return nil, stopreasons.Errorf(stopreasons.UsageError, "prune: a negative age or count")
	}
	for _, d := range []string{filepath.Join(s.Home, runsDir), filepath.Join(s.Home, worktreesDir)} {
		if err := checkNoSymlinkDir(d); err != nil {
			return nil, err
		}
	}
	if !r.DryRun {
		s.removeLeftoverPrunes()
	}
	ids, err := s.List()
	if err != nil {
		return nil, err
	}
	items := make([]PruneItem, len(ids))
	for i, id := range ids {
		it := &items[i]
		it.RunID = id
		wt := s.WorktreePath(id)
		if fi, err := os.Lstat(wt); err == nil {
			if !fi.IsDir() {
				it.Kept = wt + " is not a directory runr made (a symlink?): remove it by hand"
				continue
			}
			it.Worktree = wt
		}
		if len(ids)-i <= r.Keep {
			it.Kept = fmt.Sprintf("among the %d newest runs (--keep %d)", r.Keep, r.Keep)
			if r.Keep == 1 {
				it.Kept = "the newest run (--keep 1)"
			}
			if st, err := s.Load(id); err == nil {
				it.Status = s.DisplayStatus(st)
			}
			continue
		}
		if r.DryRun {
			s.judge(it, r)
			if it.Kept == "" && hook != nil {
				it.Kept, it.Err = hook(id, it.Worktree, true)
			}
			it.Removed = it.Kept == "" && it.Err == nil
			continue
		}
		s.pruneOne(it, r, hook)
	}
	return items, nil
}

// judge fills in the run's status and age, and Kept when the rules keep the run;
// it takes no lock (a dry run, or the first look before taking it).
func (s *Store) judge(it *PruneItem, r PruneRules) {
	st, err := s.Load(it.RunID)
	if err != nil {
		it.Kept = "its state.json cannot be read (" + firstSentence(err) + "); see `runr doctor " + it.RunID + "`"
		return
	}
	held, info, err := s.Locked(it.RunID)
	if err != nil {
		it.Err = err
		return
	}
	it.Status = s.DisplayStatus(st)
	if !held && st.RunStatus == stopreasons.RunRunning && r.Now.Sub(st.UpdatedAt) < StaleAfter {
		// A run its runr has just created and not yet locked has no lock
		// file; a crashed run has one, left by the runr that died.
		if _, err := os.Lstat(s.lockPath(it.RunID)); os.IsNotExist(err) {
			it.Kept = "created moments ago; its runr is starting it"
			return
		}
	}
	if held {
		it.Status = stopreasons.RunRunning
		it.Kept = "live"
		if info.PID > 0 {
			it.Kept += fmt.Sprintf(" (runr process %d)", info.PID)
		}
		return
	}
	s.judgeAge(it, st, r)
}

// judgeAge sets the age of a run no process holds, and Kept when it is too
// young to go.
func (s *Store) judgeAge(it *PruneItem, st *State, r PruneRules) {
	since := st.UpdatedAt
	crashed := st.RunStatus == stopreasons.RunRunning
	if crashed {
		it.Status = stopreasons.RunCrashed
	} else if st.StoppedAt != nil && !st.StoppedAt.IsZero() {
		since = *st.StoppedAt
	}
	it.Age = max(r.Now.Sub(since), 0)
	if it.Age < r.OlderThan {
		what := "stopped"
		if crashed {
			what = "last updated"
		}
		it.Kept = fmt.Sprintf("%s %s ago, within %s", what, FormatAge(it.Age), FormatAge(r.OlderThan))
	}
}

// pruneOne takes the run's lock, judges it again under the lock (a resume
// may have run since the list was read), lets hook clear what lies outside
// the store, and removes the run directory.
func (s *Store) pruneOne(it *PruneItem, r PruneRules, hook PruneHook) {
	s.judge(it, r)
	if it.Kept != "" || it.Err != nil {
		return
	}
	lock, err := s.Acquire(it.RunID)
	if err != nil {
		if stopreasons.CodeOf(err) == stopreasons.RunLocked {
			it.Status, it.Kept = stopreasons.RunRunning, "live"
			return
		}
		it.Err = err
		return
	}
	defer lock.Release()
	st, err := s.Load(it.RunID)
	if err != nil {
		it.Kept = "its state.json cannot be read (" + firstSentence(err) + "); see `runr doctor " + it.RunID + "`"
		return
	}
	it.Status = s.DisplayStatus(st)
	s.judgeAge(it, st, r)
	if it.Kept != "" {
		return
	}
	if hook != nil {
		if it.Kept, it.Err = hook(it.RunID, it.Worktree, false); it.Kept != "" || it.Err != nil {
			return
		}
	}
	if err := s.removeRunDir(it.RunID); err != nil {
		it.Err = err
		return
	}
	it.Removed = true
}

// removeRunDir renames the run directory to a hidden name, so that it
// leaves the store at once and whole, then deletes it without following
// symlinks, and drops the run's claim.
func (s *Store) removeRunDir(id string) error {
	dir := s.RunDir(id)
	fi, err := os.Lstat(dir)
	if err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "remove run %s", id)
	}
	if !fi.IsDir() {
		return symlinkError(dir)
	}
	runs := filepath.Join(s.Home, runsDir)
	gone := filepath.Join(runs, fmt.Sprintf("%s%s-%d", pruningDir, id, os.Getpid()))
	if err := renameNoReplace(dir, gone); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "remove run %s", id)
	}
	if err := syncDir(runs); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "remove run %s", id)
	}
	// os.RemoveAll opens each directory with O_NOFOLLOW and unlinks a
	// symlink as a link: nothing outside gone is touched.
	if err := os.RemoveAll(gone); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
			"remove run %s: %s is left to delete by hand", id, gone)
	}
	return s.RemoveClaim(id)
}

// removeLeftoverPrunes deletes the hidden directories of removals whose
// runr died before it finished.
func (s *Store) removeLeftoverPrunes() {
	runs := filepath.Join(s.Home, runsDir)
	entries, _ := os.ReadDir(runs)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), pruningDir) && e.IsDir() && !creatorAlive(e.Name()) {
			os.RemoveAll(filepath.Join(runs, e.Name()))
		}
	}
}

// WorktreePath is where a --worktree run's checkout lives, and the
// directory of a parallel run's worktrees: <store>/worktrees/<id>.
func (s *Store) WorktreePath(id string) string {
	return filepath.Join(s.Home, worktreesDir, id)
}

// IntegrationWorktree is where a parallel run's integration branch is
// checked out: <store>/worktrees/<id>/main.
func (s *Store) IntegrationWorktree(id string) string {
	return filepath.Join(s.WorktreePath(id), "main")
}

// WorkerWorktree is worker k's worktree of a parallel run:
// <store>/worktrees/<id>/w<k>.
func (s *Store) WorkerWorktree(id string, k int) string {
	return filepath.Join(s.WorktreePath(id), "w"+strconv.Itoa(k))
}

// firstSentence is an error's message up to its first "; ", which is
// where runr's messages start telling what to do.
func firstSentence(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "; ")
	return msg
}

// FormatAge prints d in days and hours when it is that long (3d4h), else as
// time.Duration does, rounded to the second.
func FormatAge(d time.Duration) string {
	const day = 24 * time.Hour
	if d < day {
		return stopreasons.Duration(d)
	}
	days := d / day
	hours := (d % day).Round(time.Hour) / time.Hour
	if hours == 24 {
		days, hours = days+1, 0
	}
	if hours == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, hours)
}
