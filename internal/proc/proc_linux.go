package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// procStat holds the fields of /proc/PID/stat that runr uses.
type procStat struct {
	state     byte
	pgrp      int
	startTime uint64
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces or
	// parentheses itself; the fields after the last ')' are plain.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := bytes.Fields(data[i+1:])
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: pgrp: %w", pid, err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTime: start}, nil
}

// ProcStartTime returns when pid started: /proc/PID/stat field 22, in clock
// ticks since boot.
func ProcStartTime(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, fmt.Errorf("start time of process %d: %w", pid, err)
	}
	return st.startTime, nil
}

// GroupMembers returns the live (non-zombie) processes whose process group is
// pgid.
func GroupMembers(pgid int) []int {
	members, _ := groupMembers(pgid)
	return members
}

func groupMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var members []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue // it exited while we looked
		}
		if st.pgrp == pgid && st.state != 'Z' {
			members = append(members, pid)
		}
	}
	return members, nil
}

// onlyZombies reports whether every member of the group is a zombie. Without
// /proc it cannot tell, and says no.
func onlyZombies(pgid int) bool {
	members, err := groupMembers(pgid)
	return err == nil && len(members) == 0
}

// tagged lists the live processes whose environment holds every one of
// tags ("NAME=value" exactly), read from /proc/PID/environ. Processes whose
// environment cannot be read (another user's) are not listed.
func tagged(tags []string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if carries(pid, tags) {
			out = append(out, pid)
		}
	}
	return out
}

// startedByRunr reports whether live process pid carries tags, the
// variables runr gives every process of a run.
func startedByRunr(pid int, tags []string) bool { return carries(pid, tags) }

// carries reports whether live process pid has every one of tags in its
// environment.
func carries(pid int, tags []string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(tags) == 0 {
		return false
	}
	found := 0
	for _, v := range bytes.Split(data, []byte{0}) {
		if slices.Contains(tags, string(v)) {
			found++
		}
	}
	if found < len(tags) {
		return false
	}
	st, err := readProcStat(pid)
	return err == nil && st.state != 'Z'
}

// F_SETPIPE_SZ, from fcntl.h.
const setPipeSize = 1031

// growPipe asks for a pipe of size bytes, so that a process printing fast
// fills it less often and runr reads more per call: fewer wake-ups on both
// sides. The pipe pages count against the user's pipe budget, so size stays
// modest; when the kernel refuses, the default pipe does.
func growPipe(f *os.File, size int) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, setPipeSize, uintptr(size))
		})
	}
}

// capSysAdmin is CAP_SYS_ADMIN, from linux/capability.h.
const capSysAdmin = 21

// newNamespaces asks for a user and mount namespace for the process: the
// caller's uid and gid map to themselves (the process keeps its ids), and
// CAP_SYS_ADMIN of the new user namespace stays an ambient capability past
// the gate's exec, so that an unprivileged caller's program may mount too.
func newNamespaces(a *syscall.SysProcAttr) error {
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{capSysAdmin}
	return nil
}

// namespaceRefused reports whether a start with Spec.Namespaces failed
// because the kernel refused the namespaces rather than the program.
func namespaceRefused(err error) bool {
	for _, e := range []error{syscall.EPERM, syscall.EACCES, syscall.ENOSPC, syscall.EUSERS, syscall.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
