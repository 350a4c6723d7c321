package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// hangLimit bounds every Run in these tests: a Run that hangs fails the test
// instead of the whole package timing out.
const hangLimit = 30 * time.Second

// run runs script with sh -c, after edit has adjusted the spec, and checks
// that the process group is empty when Run returns.
func run(t *testing.T, ctx context.Context, script string, edit func(*Spec)) (Result, Proc, error) {
	t.Helper()
	var proc Proc
	spec := Spec{Argv: []string{"sh", "-c", script}, OnStart: func(p Proc) error { proc = p; return nil }}
	if edit != nil {
		edit(&spec)
	}
	if user := spec.OnStart; user != nil {
		spec.OnStart = func(p Proc) error { proc = p; return user(p) }
	}
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(ctx, spec)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err == nil {
			assert.Empty(t, GroupMembers(proc.PGID), "processes left in the group of %q", script)
			assert.False(t, GroupAlive(proc.PGID), "group of %q still alive", script)
		}
		return o.res, proc, o.err
	case <-time.After(hangLimit):
		t.Fatalf("Run(%q) did not return within %s", script, hangLimit)
		return Result{}, proc, nil
	}
}

func firstLinePID(t *testing.T, out []byte) int {
	t.Helper()
	line, _, _ := strings.Cut(string(out), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "first output line should be a pid, output %q", out)
	return pid
}

func TestRunExitCodeOutputAndLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "tick.log")
	res, _, err := run(t, context.Background(), "echo out; echo err >&2; exit 3", func(s *Spec) { s.LogPath = logPath })
	require.NoError(t, err)
	assert.Equal(t, 3, res.ExitCode)
	assert.Empty(t, res.Signal)
	assert.Equal(t, int64(8), res.Bytes)
	assert.Contains(t, string(res.Tail), "out\n")
	assert.Contains(t, string(res.Tail), "err\n")
	assert.False(t, res.TimedOut || res.Idle || res.Canceled || res.Aborted || res.Killed)
	assert.Positive(t, res.Duration)

	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"out", "err"}, strings.Fields(string(log)))
	fi, err := os.Stat(logPath)
	require.NoError(t, err)
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	assert.Equal(t, os.FileMode(0o644&^umask), fi.Mode().Perm())

	// A second call appends rather than truncating.
	_, _, err = run(t, context.Background(), "echo again", func(s *Spec) { s.LogPath = logPath })
	require.NoError(t, err)
	log, err = os.ReadFile(logPath)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"out", "err", "again"}, strings.Fields(string(log)))
}

func TestRunInOwnProcessGroup(t *testing.T) {
	var started Proc
	res, proc, err := run(t, context.Background(), `echo $$; ps -o pgid= -p $$`, func(s *Spec) {
		s.OnStart = func(p Proc) error { started = p; return nil }
	})
	require.NoError(t, err)
	fields := strings.Fields(string(res.Tail))
	require.Len(t, fields, 2, "output %q", res.Tail)
	assert.Equal(t, strconv.Itoa(proc.PID), fields[0])
	assert.Equal(t, fields[0], fields[1], "the process leads its own group")
	assert.NotEqual(t, strconv.Itoa(syscall.Getpgrp()), fields[1])
	assert.Equal(t, proc, started)
	assert.Equal(t, proc.PID, proc.PGID)
	assert.NotZero(t, proc.StartTime)
	assert.False(t, proc.StartedAt.IsZero())
}

func TestRunStdin(t *testing.T) {
	// cat ends at once only if stdin is empty, not inherited.
	res, _, err := run(t, context.Background(), `cat; echo done`, nil)
	require.NoError(t, err)
	assert.Equal(t, "done\n", string(res.Tail))
	if runtime.GOOS == "linux" {
		res, _, err = run(t, context.Background(), `readlink /proc/$$/fd/0`, nil)
		require.NoError(t, err)
		assert.Equal(t, "/dev/null\n", string(res.Tail))
	}

	res, _, err = run(t, context.Background(), `cat`, func(s *Spec) { s.Stdin = strings.NewReader("the prompt\n") })
	require.NoError(t, err)
	assert.Equal(t, "the prompt\n", string(res.Tail))
}

func TestRunEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	binDir := t.TempDir()
	tool := filepath.Join(binDir, "only-in-child-path")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\necho tool ran\n"), 0o755))

	spec := Spec{
		Argv: []string{"only-in-child-path"},
		Env:  []string{"PATH=" + binDir + ":/usr/bin:/bin"},
	}
	res, err := Run(context.Background(), spec)
	require.NoError(t, err, "the program is looked up in the child's PATH")
	assert.Equal(t, "tool ran\n", string(res.Tail))

	res, _, err = run(t, context.Background(), `echo "$FOO"; pwd; echo "${HOME:-unset}"`, func(s *Spec) {
		s.Env = []string{"FOO=bar", "PATH=/usr/bin:/bin"}
		s.Dir = dir
	})
	require.NoError(t, err)
	wantDir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, "bar\n"+wantDir+"\nunset\n", string(res.Tail))

	_, err = Run(context.Background(), Spec{Argv: []string{"true"}, Dir: filepath.Join(dir, "missing")})
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "missing")
}

func TestRunProgramNotFound(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644))
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte{0x7f, 0x00, 0x01, 0x02, 0x03}, 0o755))

	for _, prog := range []string{"runr-no-such-program", filepath.Join(dir, "missing"), notExec, garbage, dir} {
		t.Run(filepath.Base(prog), func(t *testing.T) {
			started := false
			_, err := Run(context.Background(), Spec{Argv: []string{prog}, OnStart: func(Proc) error { started = true; return nil }})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrNotFound)
			assert.Contains(t, err.Error(), prog)
			assert.False(t, started)
		})
	}
}

func TestRunEmptyArgvAndCanceledContext(t *testing.T) {
	_, err := Run(context.Background(), Spec{})
	require.Error(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	started := false
	_, err = Run(ctx, Spec{Argv: []string{"true"}, OnStart: func(Proc) error { started = true; return nil }})
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, started)
}

func TestRunLogCannotBeOpened(t *testing.T) {
	started := false
	_, err := Run(context.Background(), Spec{
		Argv:    []string{"true"},
		LogPath: filepath.Join(t.TempDir(), "no-such-dir", "tick.log"),
		OnStart: func(Proc) error { started = true; return nil },
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such-dir")
	assert.False(t, started, "nothing runs without its log")
}

func TestRunTimeout(t *testing.T) {
	res, _, err := run(t, context.Background(), "sleep 30", func(s *Spec) {
		s.Timeout = 200 * time.Millisecond
		s.KillGrace = 10 * time.Second
	})
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.False(t, res.Killed, "SIGTERM was enough")
	assert.Equal(t, -1, res.ExitCode)
	assert.Equal(t, "terminated", res.Signal)
}

// An agent that ignores SIGTERM and leaves a grandchild holding stdout must
// not hang Run: the group is killed after the grace period and nothing is
// left.
func TestRunIgnoresTermGrandchildHoldsStdout(t *testing.T) {
	res, _, err := run(t, context.Background(), `trap "" TERM; sleep 60 & echo $!; sleep 60`, func(s *Spec) {
		s.Timeout = 300 * time.Millisecond
		s.KillGrace = 500 * time.Millisecond
	})
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.True(t, res.Killed)
	assert.Equal(t, "killed", res.Signal)
	assert.False(t, pidAlive(firstLinePID(t, res.Tail)), "the grandchild is gone")
}

// A call that succeeded but left a background child (here holding stdout,
// and one not) leaves nothing running.
func TestRunLeftoversOfFinishedCallAreStopped(t *testing.T) {
	for name, script := range map[string]string{
		"holding stdout": `sleep 60 & echo $!`,
		"detached":       `sleep 60 >/dev/null 2>&1 & echo $!`,
		"ignoring TERM":  `trap "" TERM; sleep 60 >/dev/null 2>&1 & echo $!`,
	} {
		t.Run(name, func(t *testing.T) {
			res, _, err := run(t, context.Background(), script, func(s *Spec) { s.KillGrace = 300 * time.Millisecond })
			require.NoError(t, err)
			assert.Equal(t, 0, res.ExitCode)
			assert.False(t, res.TimedOut || res.Idle || res.Canceled || res.Aborted)
			assert.False(t, pidAlive(firstLinePID(t, res.Tail)))
		})
	}
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, _, err := run(t, ctx, `echo ready; sleep 30`, func(s *Spec) {
		s.OnStdoutLine = func(line []byte) bool {
			if string(line) == "ready" {
				cancel()
			}
			return true
		}
	})
	require.NoError(t, err)
	assert.True(t, res.Canceled)
	assert.False(t, res.TimedOut || res.Aborted)
}

// Closing KillNow kills the group at once, without waiting out the grace.
func TestRunKillNow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	killNow := make(chan struct{})
	var once sync.Once
	begin := time.Now()
	res, _, err := run(t, ctx, `trap "" TERM; echo ready; sleep 60`, func(s *Spec) {
		s.KillGrace = time.Hour
		s.KillNow = killNow
		s.OnStdoutLine = func(line []byte) bool {
			if string(line) == "ready" {
				cancel()
				once.Do(func() { close(killNow) })
			}
			return true
		}
	})
	require.NoError(t, err)
	assert.True(t, res.Canceled)
	assert.True(t, res.Killed)
	assert.Equal(t, "killed", res.Signal)
	assert.Less(t, time.Since(begin), hangLimit)
}

// A kill channel carried by the context (WithKillNow) does what Spec.KillNow
// does, for callers that hand Run only a context.
func TestRunKillNowFromTheContext(t *testing.T) {
	killNow := make(chan struct{})
	ctx, cancel := context.WithCancel(WithKillNow(context.Background(), killNow))
	defer cancel()
	var once sync.Once
	begin := time.Now()
	res, _, err := run(t, ctx, `trap "" TERM; echo ready; sleep 60`, func(s *Spec) {
		s.KillGrace = time.Hour
		s.OnStdoutLine = func(line []byte) bool {
			if string(line) == "ready" {
				cancel()
				once.Do(func() { close(killNow) })
			}
			return true
		}
	})
	require.NoError(t, err)
	assert.True(t, res.Killed)
	assert.Equal(t, "killed", res.Signal)
	assert.Less(t, time.Since(begin), hangLimit)
}

func TestRunAbortFromStdoutLine(t *testing.T) {
	var lines []string
	res, _, err := run(t, context.Background(), `echo one; echo stop; echo after; sleep 30`, func(s *Spec) {
		s.OnStdoutLine = func(line []byte) bool {
			lines = append(lines, string(line))
			return string(line) != "stop"
		}
	})
	require.NoError(t, err)
	assert.True(t, res.Aborted)
	assert.Equal(t, []string{"one", "stop"}, lines, "no line is handed over after false")
}

func TestRunStdoutLines(t *testing.T) {
	var lines []string
	res, _, err := run(t, context.Background(),
		`echo first; echo to-stderr >&2; head -c 3000000 /dev/zero | tr '\0' a; echo; echo; printf 'no newline'`,
		func(s *Spec) {
			s.MaxLine = 1000
			s.OnStdoutLine = func(line []byte) bool {
				lines = append(lines, string(line))
				return true
			}
		})
	require.NoError(t, err)
	require.Len(t, lines, 4)
	assert.Equal(t, "first", lines[0])
	assert.Equal(t, strings.Repeat("a", 1000), lines[1], "a long line is truncated to MaxLine")
	assert.Equal(t, "", lines[2])
	assert.Equal(t, "no newline", lines[3])
	assert.Equal(t, int64(len("first\nto-stderr\n")+3000000+2+len("no newline")), res.Bytes)
}

func TestRunIdleTimeout(t *testing.T) {
	res, _, err := run(t, context.Background(), `echo started; sleep 30`, func(s *Spec) {
		s.IdleTimeout = 300 * time.Millisecond
	})
	require.NoError(t, err)
	assert.True(t, res.Idle)
	assert.False(t, res.TimedOut)
	assert.Equal(t, "started\n", string(res.Tail))
}

func TestRunChattyProcessIsNotIdle(t *testing.T) {
	res, _, err := run(t, context.Background(), `i=0; while [ $i -lt 30 ]; do echo tick $i; sleep 0.05; i=$((i+1)); done`, func(s *Spec) {
		s.IdleTimeout = time.Second
	})
	require.NoError(t, err)
	assert.False(t, res.Idle)
	assert.Equal(t, 0, res.ExitCode)
	assert.Contains(t, string(res.Tail), "tick 29\n")
}

// A process that escapes its group with setsid and keeps stdout open is
// beyond runr's reach, but must not hang Run past the grace period.
func TestRunEscapedProcessDoesNotHang(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	var escaped int
	t.Cleanup(func() {
		if escaped > 0 {
			_ = syscall.Kill(escaped, syscall.SIGKILL)
		}
	})
	res, _, err := run(t, context.Background(), `setsid sh -c 'echo $$; exec sleep 60' &
		sleep 0.2`, func(s *Spec) {
		s.KillGrace = 300 * time.Millisecond
		s.OnStdoutLine = func(line []byte) bool {
			escaped, _ = strconv.Atoi(string(line))
			return true
		}
	})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	require.Positive(t, escaped)
	assert.True(t, pidAlive(escaped), "an escaped process is out of reach")
}

// Output far larger than memory budgets streams to the log; only the tail is
// kept.
func TestRunLargeOutputStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MB")
	}
	const size = 200_000_000
	logPath := filepath.Join(t.TempDir(), "big.log")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, _, err := run(t, context.Background(), "yes | head -c "+strconv.Itoa(size), func(s *Spec) { s.LogPath = logPath })
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, int64(size), res.Bytes)
	assert.Len(t, res.Tail, DefaultTailBytes)
	assert.Equal(t, "y\ny\n", string(res.Tail[len(res.Tail)-4:]))
	fi, err := os.Stat(logPath)
	require.NoError(t, err)
	assert.Equal(t, int64(size), fi.Size())
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "allocation must not grow with the output")
}

// startGroup starts script in a new process group outside Run, reaping it in
// the background.
func startGroup(t *testing.T, script string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	return startGroupEnv(t, script)
}

// startGroupEnv is startGroup with env added to the script's environment.
func startGroupEnv(t *testing.T, script string, env ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-reaped
	})
	return cmd, reaped
}

func TestStopGroup(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	cmd, reaped := startGroup(t, `trap "" TERM; sleep 60 & : > `+ready+`; sleep 60`)
	pgid := cmd.Process.Pid
	testenv.WaitFor(t, "the script's ready file", func() bool { _, err := os.Stat(ready); return err == nil })
	assert.GreaterOrEqual(t, len(GroupMembers(pgid)), 2)
	assert.True(t, GroupAlive(pgid))

	require.NoError(t, StopGroup(pgid, 200*time.Millisecond))
	<-reaped
	assert.False(t, GroupAlive(pgid))
	assert.Empty(t, GroupMembers(pgid))

	assert.NoError(t, StopGroup(pgid, time.Second), "an empty group is already stopped")
}

// The record StopRecorded acts on comes from state.json, which can be
// edited: each way it can name a process runr did not start is refused.
func TestStopRecorded(t *testing.T) {
	tag := fmt.Sprintf("RUNR_RUN_ID=stop-recorded-%d", os.Getpid())
	// The tag is in the environment the process starts with, as runr
	// gives it, not set by a shell that has yet to exec.
	cmd, reaped := startGroupEnv(t, `exec sleep 60`, tag)
	pid := cmd.Process.Pid
	start, err := ProcStartTime(pid)
	require.NoError(t, err)
	other, _ := startGroup(t, `exec sleep 60`)
	otherStart, err := ProcStartTime(other.Process.Pid)
	require.NoError(t, err)
	initStart, _ := ProcStartTime(1)

	for _, c := range []struct {
		why string
		p   Proc
	}{
		{"a pid with another start time is another process", Proc{PID: pid, PGID: pid, StartTime: start + 1}},
		{"a group that is not the pid's own", Proc{PID: pid, PGID: syscall.Getpgrp(), StartTime: start}},
		{"a group the pid is not in", Proc{PID: pid, PGID: other.Process.Pid, StartTime: start}},
		{"init and its group", Proc{PID: 1, PGID: 1, StartTime: initStart}},
		{"runr itself", Proc{PID: os.Getpid(), PGID: syscall.Getpgrp(), StartTime: mustStart(t, os.Getpid())}},
	} {
		stopped, err := StopRecorded(c.p, time.Second, tag)
		require.NoError(t, err, c.why)
		assert.False(t, stopped, c.why)
	}
	assert.True(t, pidAlive(pid))
	if runtime.GOOS == "linux" {
		stopped, err := StopRecorded(Proc{PID: other.Process.Pid, PGID: other.Process.Pid, StartTime: otherStart}, time.Second, tag)
		require.NoError(t, err)
		assert.False(t, stopped, "a group leader that does not carry the run's tag is not the run's")
		assert.True(t, pidAlive(other.Process.Pid))
	}

	stopped, err := StopRecorded(Proc{PID: pid, PGID: pid, StartTime: start}, time.Second, tag)
	require.NoError(t, err)
	assert.True(t, stopped)
	<-reaped
	assert.False(t, GroupAlive(pid))
}

func mustStart(t *testing.T, pid int) uint64 {
	t.Helper()
	s, err := ProcStartTime(pid)
	require.NoError(t, err)
	return s
}

func TestAliveAndProcStartTime(t *testing.T) {
	self := os.Getpid()
	start, err := ProcStartTime(self)
	require.NoError(t, err)
	assert.NotZero(t, start)
	assert.True(t, Alive(self, start))
	assert.False(t, Alive(self, start+1))
	assert.False(t, Alive(self, 0), "an unknown start time never matches")
	assert.False(t, Alive(0, start))

	_, err = ProcStartTime(1 << 30)
	assert.Error(t, err)
	assert.False(t, Alive(1<<30, start))
}

func TestSignalGroupRefusesSpecialGroups(t *testing.T) {
	for _, pgid := range []int{-1, 0, 1, syscall.Getpgrp()} {
		assert.Error(t, signalGroup(pgid, 0), "pgid %d", pgid)
	}
	assert.Error(t, StopGroup(syscall.Getpgrp(), 0), "runr never stops its own group")
	assert.False(t, GroupAlive(0))
	assert.False(t, GroupAlive(1<<30))
	assert.Empty(t, GroupMembers(1<<30))
}
