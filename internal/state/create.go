package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Create makes a new run with st as its first state.json (CreateRun
// without a config.json).
func (s *Store) Create(st *State) error { return s.CreateRun(st, nil) }

// CreateRun makes a new run (see CreateRunLocked) and leaves it unlocked.
func (s *Store) CreateRun(st *State, config any) error {
	l, err := s.create(st, config, false)
	release(l)
	return err
}

// CreateRunLocked is CreateRun returning the new run's lock, taken before
// the run appears in runs/: no other runr can see the run unheld and take
// it for a crashed one (a --run-id given to two runr at once).
func (s *Store) CreateRunLocked(st *State, config any) (*Lock, error) {
	return s.create(st, config, true)
}

func release(l *Lock) {
	if l != nil {
		l.Release()
	}
}

func existsError(id, dir string) error {
	return stopreasons.Errorf(stopreasons.RunLocked,
		"run %s already exists (%s): another runr created it; `runr status %s` shows it", id, dir, id)
}

// CreateRun makes the directory of a new run holding its first state.json
// and, unless config is nil, config.json (the settings the run starts
// with). The run appears whole or not at all: it is built under a hidden
// name in runs/ (.creating-<id>-<pid>, which List never shows), synced,
// then renamed into place, so a runr killed at any instant leaves either no
// run or a complete one; a leftover hidden directory is removed by Sweep.
// It refuses an id that already exists rather than overwrite a run
// (run_locked: another runr made it).
func (s *Store) create(st *State, config any, locked bool) (*Lock, error) {
	if err := checkID(st.RunID); err != nil {
		return nil, err
	}
	runs := filepath.Join(s.Home, runsDir)
	dir := s.RunDir(st.RunID)
	if _, err := os.Lstat(dir); err == nil {
		return nil, existsError(st.RunID, dir)
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = time.Now().UTC()
	}
	st.SchemaVersion = SchemaVersion
	st.UpdatedAt = time.Now().UTC()
	st.Compact()
	type file struct {
		name string
		v    any
		raw  []byte
	}
	var files []file
	if st.Task.Prompt != "" {
		files = append(files, file{name: taskFile, raw: []byte(st.Task.Prompt)})
		st.Task.setText(st.Task.Prompt)
	}
	files = append(files, file{name: stateFile, v: st})
	if config != nil {
		files = append(files, file{name: configFile, v: config})
	}
	tmp := filepath.Join(runs, fmt.Sprintf("%s%s-%d", creatingDir, st.RunID, os.Getpid()))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
			"create run directory in %s; make the run store writable or choose another with --home", s.Home)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Mkdir(filepath.Join(tmp, logsDir), 0o755); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create log directory of run %s", st.RunID)
	}
	var written []*os.File
	defer func() {
		for _, f := range written {
			f.Close()
		}
	}()
	for _, f := range files {
		data := f.raw
		if data == nil {
			b, err := json.MarshalIndent(f.v, "", "  ")
			if err != nil {
				return nil, stopreasons.Wrap(stopreasons.InternalError, err, "encode %s of run %s", f.name, st.RunID)
			}
			data = append(b, '\n')
		}
		w, err := writeNew(filepath.Join(tmp, f.name), data)
		if err != nil {
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
		}
		written = append(written, w)
	}
	// The files' writeback starts together: the syncs wait for one round
	// of writes, not one each.
	startWriteback(written)
	for _, f := range written {
		if err := f.Sync(); err != nil {
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
		}
	}
	if err := syncDir(tmp); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
	}
	var lock *Lock
	if locked {
		var err error
		if lock, err = newLock(st.RunID, filepath.Join(tmp, lockFile)); err != nil {
			return nil, err
		}
	}
	if err := renameNoReplace(tmp, dir); err != nil {
		release(lock)
		if errors.Is(err, fs.ErrExist) {
			return nil, existsError(st.RunID, dir)
		}
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
	}
	done = true
	if lock != nil {
		lock.path = s.lockPath(st.RunID) // the same file, renamed with its directory
	}
	if err := syncDir(runs); err != nil {
		release(lock)
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
	}
	return lock, nil
}

// writeNew creates path, which must not exist, with data, and returns it
// open for the caller to sync and close.
func writeNew(path string, data []byte) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
