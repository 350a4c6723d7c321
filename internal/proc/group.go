package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// signalGroup sends sig to every process of group pgid. It refuses the
// numbers with special meanings for kill(2) (0: our own group, -1 and 1:
// every process) and runr's own group.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return fmt.Errorf("refusing to signal process group %d: not a group runr started", pgid)
	}
	return syscall.Kill(-pgid, sig)
}

// terminateGroup asks the group to stop: SIGTERM, then SIGCONT so that a
// stopped (Ctrl+Z'd, traced) process wakes up to receive it.
func terminateGroup(pgid int) error {
	if err := signalGroup(pgid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	_ = signalGroup(pgid, syscall.SIGCONT)
	return nil
}

// GroupAlive reports whether any process is left in group pgid. On Linux a
// zombie (dead, waiting for a parent to reap it) does not count: it runs
// nothing and holds nothing open.
func GroupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	return !onlyZombies(pgid)
}

// StopGroup stops group pgid: SIGTERM and SIGCONT, up to grace for it to
// exit, then SIGKILL. It returns nil once the group is empty (or was already).
func StopGroup(pgid int, grace time.Duration) error {
	if err := terminateGroup(pgid); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
		return fmt.Errorf("stop process group %d: %w", pgid, err)
	}
	if waitGroupGone(pgid, grace) {
		return nil
	}
	if err := signalGroup(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	if waitGroupGone(pgid, killWait) {
		return nil
	}
	return fmt.Errorf("process group %d still has processes %v after SIGKILL; they may be stuck in uninterruptible I/O, check them with ps -g %d",
		pgid, GroupMembers(pgid), pgid)
}

func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !GroupAlive(pgid) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
}

// Alive reports whether pid exists and started at startTime, so that a pid
// the system has since given to another process is never mistaken for it. An
// unknown start time (0) never matches.
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 || startTime == 0 {
		return false
	}
	st, err := ProcStartTime(pid)
	return err == nil && st == startTime
}

// StopRecorded stops the group of a process recorded by an earlier runr
// (crash recovery), but only if that very process is still alive and is
// what runr starts. The record comes from state.json, which anyone who
// can write the repository can edit, so it is checked, not believed: the
// pid started at the recorded time; runr starts every process as the
// leader of its own group, so the pgid is the pid and the pid is in that
// group now; it is neither init's group nor runr's own; and, where the
// system shows another process's environment (Linux), it carries tags
// (the run's RUNR_RUN_ID...). A record that fails any of these is left
// alone. It reports whether it stopped anything.
func StopRecorded(p Proc, grace time.Duration, tags ...string) (bool, error) {
	if !Alive(p.PID, p.StartTime) {
		return false, nil
	}
	pgid := p.PGID
	if pgid == 0 {
		pgid = p.PID
	}
	if pgid != p.PID || pgid <= 1 || pgid == os.Getpid() || pgid == syscall.Getpgrp() {
		return false, nil
	}
	if now, err := syscall.Getpgid(p.PID); err != nil || now != pgid {
		return false, nil
	}
	if !startedByRunr(p.PID, tags) {
		return false, nil
	}
	if err := StopGroup(pgid, grace); err != nil {
		return true, fmt.Errorf("stop recorded process %d: %w", p.PID, err)
	}
	return true, nil
}

// StopTagged stops every process whose environment holds every one of tags
// (runr gives each process of a run RUNR_RUN_ID=<id>, and a parallel run's
// worker RUNR_WORKER=<k> as well), wherever it is: one that left
// its process group (setsid) or outlived a runr killed before it recorded
// it. A group whose every member carries them is stopped as a group; any
// other tagged process alone. runr's own process and group are never
// signalled, and each signal follows a fresh reading of the environment,
// so a pid since reused by another program is left alone. SIGTERM and
// SIGCONT first, SIGKILL after grace. It returns the pids it found. Linux
// only: elsewhere it finds nothing.
func StopTagged(grace time.Duration, tags ...string) ([]int, error) {
	self, own := os.Getpid(), syscall.Getpgrp()
	find := func() []int {
		var out []int
		for _, pid := range tagged(tags) {
			if pid == self {
				continue
			}
			if pgid, err := syscall.Getpgid(pid); err != nil || pgid == own {
				continue
			}
			out = append(out, pid)
		}
		return out
	}
	found := find()
	if len(found) == 0 {
		return nil, nil
	}
	signal := func(pids []int, sig syscall.Signal) {
		done := map[int]bool{}
		for _, pid := range pids {
			pgid, err := syscall.Getpgid(pid)
			if err != nil || done[pgid] {
				continue
			}
			if wholeGroup(pgid, tags) {
				done[pgid] = true
				_ = signalGroup(pgid, sig)
				if sig == syscall.SIGTERM {
					_ = signalGroup(pgid, syscall.SIGCONT)
				}
				continue
			}
			if carries(pid, tags) {
				_ = syscall.Kill(pid, sig)
				if sig == syscall.SIGTERM {
					_ = syscall.Kill(pid, syscall.SIGCONT)
				}
			}
		}
	}
	signal(found, syscall.SIGTERM)
	gone := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for {
			if len(find()) == 0 {
				return true
			}
			if !time.Now().Before(deadline) {
				return false
			}
			time.Sleep(pollInterval)
		}
	}
	if gone(grace) {
		return found, nil
	}
	signal(find(), syscall.SIGKILL)
	if gone(killWait) {
		return found, nil
	}
	return found, fmt.Errorf("processes %v with %s are still alive after SIGKILL; check them with ps", find(), strings.Join(tags, " "))
}

// wholeGroup reports whether every live member of group pgid carries tags.
func wholeGroup(pgid int, tags []string) bool {
	members := GroupMembers(pgid)
	if len(members) == 0 {
		return false
	}
	for _, pid := range members {
		if !carries(pid, tags) {
			return false
		}
	}
	return true
}
