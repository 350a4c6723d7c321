package state

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames a directory to path unless path exists: two runs
// never share a directory, even when an id were to repeat.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A file system without RENAME_NOREPLACE: rename(2) replaces
		// only an empty directory, and CreateRun looked first.
		return os.Rename(from, to)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}
