// Package state is runr's run store: one directory per run holding
// state.json, the timeline, the lock, logs and reports (DESIGN §5).
//
// It promises that state.json is only ever replaced atomically, so a reader
// never sees a partial file even after a SIGKILL; that a file it cannot read
// is reported as state_corrupt and never modified; and that no run id from
// outside reaches a path outside the store.
package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// File and directory names inside the store.
const (
	runsDir       = "runs"
	activeDir     = "active"
	worktreesDir  = "worktrees"
	logsDir       = "logs"
	stateFile     = "state.json"
	configFile    = "config.json"
	timelineFile  = "timeline.jsonl"
	lockFile      = "lock"
	taskFile      = "task.md"
	stopFile      = "stop-request"
	tempPrefix    = ".tmp-"
	probePrefix   = tempPrefix + "probe-"
	creatingDir   = ".creating-"
	runIDTimeForm = "20060102T150405Z"
)

// Latest is the run reference that names the run created last.
const Latest = "latest"

// Store is a run store rooted at Home.
type Store struct {
	Home string
	enc  *encodeCache // what Save need not encode again; nil: encode all
}

// DefaultHome is the run store of a repository whose git common dir is
// commonDir (guard.CommonDir): <git common dir>/runr. The common dir is
// shared by all worktrees of a repository, so their runs are listed
// together, and it lies inside .git, where an agent's `git clean -fdx`
// cannot reach it.
func DefaultHome(commonDir string) string {
	return filepath.Join(filepath.Clean(commonDir), "runr")
}

// Open makes sure the store at home exists and is writable.
func Open(home string) (*Store, error) {
	abs, err := filepath.Abs(home)
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run store %s", home)
	}
	for _, d := range []string{runsDir, activeDir, worktreesDir} {
		p := filepath.Join(abs, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
				"cannot create run store directory %s; make it writable or choose another store with --home", p)
		}
	}
	// The directories may exist but be read-only; only a real write tells.
	// Named .tmp-probe-<random>-<pid>, so that status can tell a probe
	// left by a killed runr from one being made now.
	probe, err := os.CreateTemp(filepath.Join(abs, runsDir), probePrefix+"*-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
			"run store %s is not writable; fix its permissions or choose another store with --home", abs)
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run store %s: remove probe file", abs)
	}
	return &Store{Home: abs, enc: &encodeCache{}}, nil
}

// OpenRead opens the store at home for reading only (status, doctor of a
// run): it creates nothing and does not ask for write permission, so a
// read-only store, or one on a read-only mount, can still be inspected.
func OpenRead(home string) (*Store, error) {
	abs, err := filepath.Abs(home)
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run store %s", home)
	}
	return &Store{Home: abs, enc: &encodeCache{}}, nil
}

// RunDir is the directory of run id.
func (s *Store) RunDir(id string) string {
	return filepath.Join(s.Home, runsDir, id)
}

// LogPath is the log file of one phase of one tick, e.g.
// runs/<id>/logs/tick-0007-implement.log.
func (s *Store) LogPath(id string, tick int, phase string) string {
	return RunLogPath(s.RunDir(id), tick, phase)
}

// RunLogPath is the log file of one phase of one tick of the run whose
// directory is runDir.
func RunLogPath(runDir string, tick int, phase string) string {
	return filepath.Join(runDir, logsDir, fmt.Sprintf("tick-%04d-%s.log", tick, phase))
}

// StatePath is the state.json of run id.
func (s *Store) StatePath(id string) string {
	return filepath.Join(s.RunDir(id), stateFile)
}

// LeftoverTemps lists the temporary files that interrupted atomic writes
// left in run directories and in active/. They are harmless, never read, and
// safe to delete once no runr process writes to that run. The
// .tmp-state.json-spare that an older runr kept beside a running run's
// state.json is one of them: no runr writes to it now.
func (s *Store) LeftoverTemps() ([]string, error) {
	ids, err := s.List()
	if err != nil {
		return nil, err
	}
	dirs := []string{filepath.Join(s.Home, activeDir)}
	for _, id := range ids {
		dirs = append(dirs, s.RunDir(id))
	}
	var out []string
	for _, d := range dirs {
		m, err := filepath.Glob(filepath.Join(d, tempPrefix+"*"))
		if err != nil {
			return nil, stopreasons.Wrap(stopreasons.InternalError, err, "look for temporary files in %s", d)
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return out, nil
}

// DisplayStatus is the run status to show: st.RunStatus, except that a run
// whose state says running while no live process holds its lock is crashed.
func (s *Store) DisplayStatus(st *State) string { return s.LiveStatus(st.RunID, st.RunStatus) }

// wrapIO wraps an error of writing a store file: environment_invalid, unless
// it already carries a reason (a symlink in the file's place is
// state_corrupt).
func wrapIO(err error, format string, args ...any) error {
	var e *stopreasons.Error
	if errors.As(err, &e) {
		return stopreasons.Wrap(e.Code, err, format, args...)
	}
	return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, format, args...)
}
