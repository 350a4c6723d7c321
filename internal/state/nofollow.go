package state

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// The store lies inside .git, within reach of the agent runr supervises. A
// symlink planted where a store file should be would make runr write
// through it, into a file outside the store; so every store file is opened
// with O_NOFOLLOW, and a symlink found in its place is state_corrupt. The
// flag guards the last path component; the directories above it are checked
// with Lstat (checkNoSymlinkDir) where runr creates files in them.

// symlinkError is state_corrupt naming the path that is a symlink.
func symlinkError(path string) error {
	return stopreasons.Errorf(stopreasons.StateCorrupt,
		"%s is a symlink where runr keeps a file of its own; runr never writes through it: remove it (and check what made it)", path)
}

// isSymlinkErr reports whether err is what open(2) with O_NOFOLLOW returns
// for a symlink.
func isSymlinkErr(err error) bool {
	return errors.Is(err, syscall.ELOOP)
}

// openNoFollow opens a store file: the one way runr opens a file of a run,
// for reading or writing. O_NOFOLLOW: a symlink at path is state_corrupt
// and its target is never opened. O_NONBLOCK: a FIFO or a device planted in
// its place (open(2) of a FIFO waits for the other end) never holds runr;
// what was opened is checked to be a regular file, and anything else is
// state_corrupt naming it. On a regular file O_NONBLOCK changes nothing.
// Other errors (a missing file: fs.ErrNotExist) are returned as they are.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		switch {
		case isSymlinkErr(err):
			return nil, symlinkError(path)
		case errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.ENODEV):
			// A directory opened for writing, a FIFO with no reader
			// opened for writing, a device without its driver.
			return nil, notRegularError(path, lstatMode(path))
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegularError(path, fi.Mode())
	}
	return f, nil
}

// OpenRecord opens the store file at path for reading, as openNoFollow
// does: never through a symlink, never blocking, a regular file or
// state_corrupt naming path. Every reader of a run's records (state.json,
// config.json, the timeline, the logs, the guard snapshot) opens through it.
func OpenRecord(path string) (*os.File, error) {
	return openNoFollow(path, os.O_RDONLY, 0)
}

// ReadRecord reads the whole store file at path, opened by OpenRecord.
func ReadRecord(path string) ([]byte, error) { return readFileNoFollow(path) }

// checkRecordType returns state_corrupt when something other than a
// regular file is at path (a symlink, a FIFO, a directory); a missing path
// is no error. It is for files opened through a library that takes a path
// (the lock), where openNoFollow cannot be used for the first open.
func checkRecordType(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return symlinkError(path)
	}
	if !fi.Mode().IsRegular() {
		return notRegularError(path, fi.Mode())
	}
	return nil
}

// notRegularError is state_corrupt naming the path where runr keeps a
// regular file and found something else.
func notRegularError(path string, mode fs.FileMode) error {
	return stopreasons.Errorf(stopreasons.StateCorrupt,
		"%s is %s, not the regular file runr keeps there; runr does not read it: remove it (and check what made it)",
		path, kindOf(mode))
}

func lstatMode(path string) fs.FileMode {
	fi, err := os.Lstat(path)
	if err != nil {
		return fs.ModeIrregular
	}
	return fi.Mode()
}

// kindOf names the type of a file for a message.
func kindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return "a symlink"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// checkNoSymlinkDir returns state_corrupt when dir is a symlink, or
// anything else that is not a directory (a FIFO, a file planted where runr
// keeps logs/); a missing dir is no error.
func checkNoSymlinkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return symlinkError(dir)
	}
	if !fi.IsDir() {
		return stopreasons.Errorf(stopreasons.StateCorrupt,
			"%s is %s, not the directory runr keeps there: remove it (and check what made it)", dir, kindOf(fi.Mode()))
	}
	return nil
}

// checkNotSymlink returns state_corrupt when path exists and is a symlink
// or anything else that is not a regular file, or when a directory between
// it and the store's runs/ is not a directory of its own (checkRunPath).
func checkNotSymlink(path string) error {
	if err := checkRunPath(path); err != nil {
		return err
	}
	return checkRecordType(path)
}

// checkRunPath checks the directories that hold the store file at path, up
// to and including runs/ (its run directory, logs/ or prompts/, runs/):
// each must be a directory, not a symlink. The agent can write in .git: a
// run directory it swapped for a symlink while the run works would make
// every later write (state.json, logs, report.md, stop.json) land in the
// link's target. A path outside any runs/ is checked up to three levels.
func checkRunPath(path string) error {
	dir := filepath.Dir(path)
	for range 4 {
		if err := checkNoSymlinkDir(dir); err != nil {
			return err
		}
		if filepath.Base(dir) == runsDir {
			return nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
	return nil
}

// CheckNoSymlink returns state_corrupt when the store file path, or the
// directory it is in, is a symlink ("" is fine: no file). A process whose
// log path fails it is not started.
func CheckNoSymlink(path string) error {
	if path == "" {
		return nil
	}
	return checkNotSymlink(path)
}

// WriteFileNoFollow writes data to path (a prompt, a report), creating its
// directory, without following a symlink at path or at its directory: a
// symlink there is state_corrupt and its target is left alone.
func WriteFileNoFollow(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := checkRunPath(path); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create directory %s", dir)
	}
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		if stopreasons.CodeOf(err) == stopreasons.StateCorrupt {
			return err
		}
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "write %s", path)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "write %s", path)
	}
	return nil
}

// OpenAppendNoFollow opens path (a log) for appending, creating it, without
// following a symlink at path or at its directory.
func OpenAppendNoFollow(path string) (*os.File, error) {
	if err := checkRunPath(path); err != nil {
		return nil, err
	}
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil && stopreasons.CodeOf(err) != stopreasons.StateCorrupt {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "open %s", path)
	}
	return f, err
}

// readFileNoFollow is os.ReadFile of a store file, opened by openNoFollow.
func readFileNoFollow(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// CheckRunDir returns state_corrupt when the directory of run id, or runs/
// above it, is no longer a directory of its own: swapped for a symlink (or
// anything else), or gone, while the run works. A step that failed asks it,
// so that a store turned away under the run is named as such rather than
// as the failure it caused.
func (s *Store) CheckRunDir(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	dir := s.RunDir(id)
	if err := checkRunPath(filepath.Join(dir, stateFile)); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return stopreasons.Errorf(stopreasons.StateCorrupt,
			"the run directory %s is gone while the run worked; restore it (and check what moved it)", dir)
	}
	return nil
}
