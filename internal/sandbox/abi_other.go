//go:build !linux

package sandbox

import "golang.org/x/sys/unix"

// ABI is 0: Landlock is Linux's.
func ABI() int { return 0 }

// Kernel is the kernel's release (uname -r).
func Kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}
