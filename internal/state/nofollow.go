package state

import (
	"errors"
	"fmt"
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

// openNoFollow is os.OpenFile with O_NOFOLLOW; a symlink at path is
// state_corrupt. Other errors are returned as they are.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	if err != nil && isSymlinkErr(err) {
		return nil, symlinkError(path)
	}
	return f, err
}

// checkNoSymlinkDir returns state_corrupt when dir is a symlink; a missing
// dir is no error.
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
	return nil
}

// checkNotSymlink returns state_corrupt when path exists and is a symlink.
func checkNotSymlink(path string) error { return checkNoSymlinkDir(path) }

// CheckNoSymlink returns state_corrupt when the store file path, or the
// directory it is in, is a symlink ("" is fine: no file). A process whose
// log path fails it is not started.
func CheckNoSymlink(path string) error {
	if path == "" {
		return nil
	}
	if err := checkNoSymlinkDir(filepath.Dir(path)); err != nil {
		return err
	}
	return checkNotSymlink(path)
}

// WriteFileNoFollow writes data to path (a prompt, a report), creating its
// directory, without following a symlink at path or at its directory: a
// symlink there is state_corrupt and its target is left alone.
func WriteFileNoFollow(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := checkNoSymlinkDir(dir); err != nil {
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
	if err := checkNoSymlinkDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil && stopreasons.CodeOf(err) != stopreasons.StateCorrupt {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "open %s", path)
	}
	return f, err
}

// readFileNoFollow is os.ReadFile without following a symlink at path.
func readFileNoFollow(path string) ([]byte, error) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(f)
}
