package bench

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsTopdirFL is FS_TOPDIR_FL of linux/fs.h.
const fsTopdirFL = 0x00020000

// spreadDirs gives dir ext4's top-directory flag (chattr +T), so that the
// directories made in it go to block groups of their own: ext4 without a
// journal passes over the inodes freed in a group in the last half minute
// when it hands out a new one there, and a run that replaced thousands of
// files (state.json is replaced at every write) would otherwise slow down
// the runs after it. A file system without the flag leaves it unset.
func spreadDirs(t *testing.T, dir string) {
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFL))
	}
	if err != nil {
		fmt.Printf("  (the scratch directory keeps its flags: %v)\n", err)
	}
}
