package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProcStartTime returns when pid started, in microseconds since the epoch.
func ProcStartTime(pid int) (uint64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, fmt.Errorf("start time of process %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid {
		return 0, fmt.Errorf("start time of process %d: no such process", pid)
	}
	tv := kp.Proc.P_starttime
	return uint64(tv.Sec)*1_000_000 + uint64(tv.Usec), nil
}

// GroupMembers is not available without /proc; it returns nil.
func GroupMembers(pgid int) []int { return nil }

// Without /proc zombies cannot be told apart; kill(2) has the last word.
func onlyZombies(pgid int) bool { return false }

// Without /proc the environment of another process cannot be read: no
// process is found by it.
func tagged(tags []string) []int { return nil }

func carries(pid int, tags []string) bool { return false }

// startedByRunr cannot read another process's environment here: the pid,
// its start time and its group are all StopRecorded can check.
func startedByRunr(pid int, tags []string) bool { return true }

// growPipe keeps the default pipe: macOS sizes pipes by itself.
func growPipe(f *os.File, size int) {}

// newNamespaces refuses: user and mount namespaces are Linux's.
func newNamespaces(a *syscall.SysProcAttr) error {
	return errors.New("user and mount namespaces exist on Linux only")
}

func namespaceRefused(err error) bool { return false }

// sampleGroup cannot read a group's signs of life without /proc: output is
// the only one there.
func sampleGroup(pgid int) (groupSample, bool) { return groupSample{}, false }
