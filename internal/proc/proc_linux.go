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
	cpu       uint64 // utime + stime, clock ticks
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
	// f[11] and f[12] are fields 14 and 15 (utime, stime).
	utime, _ := strconv.ParseUint(string(f[11]), 10, 64)
	stime, _ := strconv.ParseUint(string(f[12]), 10, 64)
	return procStat{state: f[0][0], pgrp: pgrp, startTime: start, cpu: utime + stime}, nil
}

// sampleGroup reads the signs of life of the live processes of group pgid
// from /proc: their CPU time, the bytes they read and wrote
// (/proc/PID/io's rchar and wchar, where readable) and their pids.
func sampleGroup(pgid int) (groupSample, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return groupSample{}, false
	}
	var s groupSample
	var pids []byte
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.pgrp != pgid || st.state == 'Z' {
			continue
		}
		s.cpu += st.cpu
		s.io += procIO(pid)
		pids = strconv.AppendInt(append(pids, ' '), int64(pid), 10)
	}
	s.pids = string(pids)
	return s, true
}

// procIO is the bytes pid read and wrote, 0 when /proc/PID/io cannot be
// read.
func procIO(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0
	}
	var n uint64
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(": "))
		if ok && (string(k) == "rchar" || string(k) == "wchar") {
			c, _ := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			n += c
		}
	}
	return n
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

// capSysAdmin is CAP_SYS_ADMIN, capSetPCap CAP_SETPCAP, from
// linux/capability.h.
const (
	capSysAdmin = 21
	capSetPCap  = 8
)

// newNamespaces asks for a user and mount namespace for the process: the
// caller's uid and gid map to themselves (the process keeps its ids), and
// CAP_SYS_ADMIN of the new user namespace stays an ambient capability past
// the gate's exec, so that an unprivileged caller's program may mount too;
// CAP_SETPCAP too, so that it may then empty its bounding set before it
// runs anything else (the sandbox helper leaves no capability behind).
func newNamespaces(a *syscall.SysProcAttr) error {
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{capSysAdmin, capSetPCap}
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
