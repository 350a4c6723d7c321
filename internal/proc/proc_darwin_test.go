package proc

import "syscall"

// pidAlive reports whether pid exists; launchd reaps orphans promptly.
func pidAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
