package state

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing each file's data to disk without waiting,
// so that the fsyncs that follow wait for writes already under way side
// by side instead of starting one after the other.
func startWriteback(files []*os.File) {
	for _, f := range files {
		_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}
}
