// Package worker starts every process runr runs (agents, verification,
// review, scripts) and promises that none of them outlives its call: each runs
// in its own process group, is stopped with SIGTERM, SIGCONT and then SIGKILL to
// the whole group, and has its output streamed to a log file and a bounded tail
// buffer so that memory stays flat whatever it prints.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults for the zero values of Spec.
const (
	DefaultKillGrace = 5 * time.Second
	DefaultTailBytes = 64 << 10
	DefaultMaxLine   = 1 << 20
)

// After SIGKILL a group normally empties at once; a process stuck in the
// kernel (uninterruptible I/O) may not, and runr must not hang on it forever.
const killWait = 2 * time.Second

// pipeSize is the capacity asked for the stdout pipe, where an agent's bulk
// output flows.
const pipeSize = 1 << 20

// How often a group is checked for remaining members once the main process is
// gone.
const pollInterval = 10 * time.Millisecond

// The gate in front of a process whose start is recorded: it waits for
// runr's line on fd 3 and then becomes the program ("$@" is its path and
// arguments). EOF without a line, runr having died before the record was
// written, ends it with nothing run, so no process of a run ever works
// unrecorded. Its cost is one exec of the shell.
const (
	gateShell  = "/bin/sh"
	gatePrefix = `IFS= read -r _ <&3 || exit 125; exec 3<&-; `
	gateScript = gatePrefix + `exec "$@"`
)

// shellScript reports whether argv is `sh -c SCRIPT [NAME ARGS...]` run by
// the gate's own shell (argv[0] is sh and path the same file as
// gateShell), and returns SCRIPT. The script goes after the gate's prefix on its first line, so
// the shell numbers its lines as it would have.
func shellScript(path string, argv []string) (string, bool) {
	// Asked for as sh: a multi-call program (busybox) that is /bin/sh
	// under another name would be another program.
	if len(argv) < 3 || argv[1] != "-c" || filepath.Base(argv[0]) != "sh" {
		return "", false
	}
	a, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	b, err := os.Stat(gateShell)
	if err != nil || !os.SameFile(a, b) {
		return "", false
	}
	return argv[2], true
}

// ErrNotFound is wrapped by Run when the program does not exist or cannot be
// executed.
var ErrNotFound = errors.New("program not found or not executable")

// Spec describes one process to run.
type Spec struct {
	Argv        []string
	Dir         string
	Env         []string      // the whole environment; nil means os.Environ()
	Stdin       io.Reader     // nil: /dev/null
	LogPath     string        // stdout and stderr both stream here (created/appended, 0644); "" discards
	Timeout     time.Duration // 0: none. Past it: graceful stop, Result.TimedOut
	IdleTimeout time.Duration // 0: none. No byte on stdout or stderr for this long: graceful stop, Result.Idle
	KillGrace   time.Duration // between SIGTERM(+SIGCONT) and SIGKILL of the group; 0 means 5s
	TailBytes   int           // bounded tail of the combined output kept in memory; 0 means 64 KiB
	MaxLine     int           // longest stdout line handed to OnStdoutLine (longer ones truncated); 0 means 1 MiB
	// OnStart is called once the process started, before it can do any
	// work: it is held at a gate (a shell reading one line from a pipe)
	// until OnStart returned, so that what OnStart records (runr persists
	// the pgid) is on disk before the program runs. An error from OnStart
	// ends the process at the gate; Run returns that error.
	OnStart func(Proc) error
	// OnStdoutLine receives each stdout line without its newline, in order;
	// returning false stops the process early (Result.Aborted). The slice is
	// reused after the call.
	OnStdoutLine func(line []byte) bool
	// LineStarts, when set, narrows OnStdoutLine to the lines whose first
	// byte it marks: an empty line, or one beginning with a byte it does
	// not mark, is not handed over. For a caller that looks only for lines
	// of known beginnings, so that the bulk of a large output costs no
	// call per line.
	LineStarts *[256]bool
	// OnStdout receives stdout as it is read, in chunks, in order, before
	// OnStdoutLine sees the chunk's lines: for what wants the bytes (the end
	// of the output) rather than the lines. The slice is reused after the
	// call.
	OnStdout func(chunk []byte)
	KillNow  <-chan struct{} // closing it SIGKILLs the whole group at once (a second Ctrl+C)
	// Stdout, when set, receives the whole of stdout instead of the log, the
	// tail and OnStdoutLine, which then see stderr only (git's output is
	// data, its stderr the message). A write error drops the rest of stdout
	// but the process is still drained.
	Stdout io.Writer
	// Wrap, when set, is a program and its first arguments that start the
	// process in its place: Argv's program is found and checked as without
	// it, and Wrap's program runs with the found path and Argv's arguments
	// appended (runr's sandbox helper, which then becomes the program with
	// exec, keeping its pid and group).
	Wrap []string
	// Namespaces starts the process in a user and mount namespace of its
	// own (Linux): the caller's uid and gid map to themselves, setgroups is
	// denied, and CAP_SYS_ADMIN is an ambient capability so that the
	// program past the gate may mount there. A kernel that refuses the
	// namespace fails the start with an error wrapping ErrNamespaces.
	Namespaces bool
}

// ErrNamespaces is wrapped by Run when Spec.Namespaces was asked for and the
// kernel refused to create the namespaces.
var ErrNamespaces = errors.New("cannot create a user and mount namespace")

// Proc identifies a started process. StartTime is /proc/PID/stat field 22 on
// Linux (microseconds since the epoch on macOS); together with PID it tells the
// process apart from a later one that reuses the pid.
type Proc struct {
	PID, PGID int
	StartTime uint64
	StartedAt time.Time
}

// Result is how a process ended. TimedOut, Idle, Canceled (ctx done) and
// Aborted (OnStdoutLine returned false) say why runr stopped it; Killed says
// SIGKILL was needed for its group.
type Result struct {
	ExitCode int    // the exit status; -1 when ended by a signal
	Signal   string // e.g. "killed", "terminated" when ended by a signal
	Duration time.Duration

	TimedOut, Idle, Canceled, Aborted, Killed bool

	Tail  []byte // last TailBytes of combined stdout+stderr
	Bytes int64  // total bytes of output
}

// Run starts spec.Argv in its own process group, waits for it and for its
// group to be gone, and reports how it ended. It returns an error only when
// the process could not be started or its log could not be written; a
// non-zero exit is not an error.
func Run(ctx context.Context, spec Spec) (Result, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return Result{}, errors.New("run: the command is empty; give the program to run")
	}
	spec = withDefaults(spec)
	if spec.KillNow == nil {
		spec.KillNow = killNowOf(ctx)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("run %s: not started: %w", spec.Argv[0], err)
	}
	if spec.Dir != "" {
		if fi, err := os.Stat(spec.Dir); err != nil {
			return Result{}, fmt.Errorf("run %s: working directory: %w", spec.Argv[0], err)
		} else if !fi.IsDir() {
			return Result{}, fmt.Errorf("run %s: working directory %s is not a directory", spec.Argv[0], spec.Dir)
		}
	}
	path, err := LookPath(spec.Argv[0], spec.Dir, spec.Env)
	if err != nil {
		return Result{}, fmt.Errorf("run %w", err)
	}
	out, err := newSink(spec.LogPath, spec.TailBytes)
	if err != nil {
		return Result{}, err
	}
	// Pipes of our own rather than exec's copying goroutines: Wait then returns
	// as soon as the main process exits, so its leftovers can be stopped at once
	// instead of after a grandchild lets go of the pipe.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		out.close()
		return Result{}, fmt.Errorf("run %s: stdout pipe: %w", spec.Argv[0], err)
	}
	growPipe(stdoutR, pipeSize)
	// When nobody reads stdout apart, both streams share one pipe, so that the
	// log and the tail keep the order the process wrote in (the last line of a
	// failed check is its verdict, not whichever stream was read last).
	stderrR, stderrW := (*os.File)(nil), stdoutW
	if spec.Stdout != nil || spec.OnStdoutLine != nil {
		stderrR, stderrW, err = os.Pipe()
		if err != nil {
			out.close()
			closeAll(stdoutR, stdoutW)
			return Result{}, fmt.Errorf("run %s: stderr pipe: %w", spec.Argv[0], err)
		}
	}

	stopCtx, requestStop := context.WithCancel(context.Background())
	defer requestStop()
	var termSent atomic.Bool
	cmd := exec.CommandContext(stopCtx, path, spec.Argv[1:]...)
	cmd.Args[0] = spec.Argv[0]
	args := spec.Argv[1:]
	if len(spec.Wrap) > 0 {
		if reason := unknownFormat(path); reason != "" {
			out.close()
			closeAll(stdoutR, stdoutW, stderrR, stderrW)
			return Result{}, fmt.Errorf("run %w", &NotFoundError{Name: spec.Argv[0], Reason: reason})
		}
		args = append(append(append([]string{}, spec.Wrap[1:]...), path), spec.Argv[1:]...)
		path = spec.Wrap[0]
		cmd = exec.CommandContext(stopCtx, path, args...)
	}
	var gateW *os.File
	if spec.OnStart != nil {
		if reason := unknownFormat(path); reason != "" {
			out.close()
			closeAll(stdoutR, stdoutW, stderrR, stderrW)
			return Result{}, fmt.Errorf("run %w", &NotFoundError{Name: spec.Argv[0], Reason: reason})
		}
		var gateR *os.File
		if gateR, gateW, err = os.Pipe(); err != nil {
			out.close()
			closeAll(stdoutR, stdoutW, stderrR, stderrW)
			return Result{}, fmt.Errorf("run %s: gate pipe: %w", spec.Argv[0], err)
		}
		defer gateR.Close()
		defer gateW.Close()
		if script, ok := shellScript(path, spec.Argv); ok && len(spec.Wrap) == 0 {
			// `sh -c SCRIPT`: the gate's own shell runs the script once
			// past the gate, which spares an exec.
			cmd = exec.CommandContext(stopCtx, gateShell, append([]string{"-c", gatePrefix + script}, spec.Argv[3:]...)...)
			cmd.Args[0] = spec.Argv[0]
		} else {
			cmd = exec.CommandContext(stopCtx, gateShell, append([]string{"-c", gateScript, spec.Argv[0], path}, args...)...)
		}
		cmd.ExtraFiles = []*os.File{gateR}
	}
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin = spec.Stdin
	cmd.Stdout = stdoutW
	cmd.Stderr = stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if spec.Namespaces {
		if err := newNamespaces(cmd.SysProcAttr); err != nil {
			out.close()
			closeAll(stdoutR, stdoutW, stderrR, stderrW)
			return Result{}, fmt.Errorf("run %s: %w: %w", spec.Argv[0], ErrNamespaces, err)
		}
	}
	cmd.Cancel = func() error {
		termSent.Store(true)
		return terminateGroup(cmd.Process.Pid)
	}
	// The group's SIGKILL comes from Run's own timer at the same deadline;
	// WaitDelay also bounds a Stdin copy that never finishes.
	cmd.WaitDelay = spec.KillGrace

	if err := cmd.Start(); err != nil {
		out.close()
		closeAll(stdoutR, stdoutW, stderrR, stderrW)
		if spec.Namespaces && namespaceRefused(err) {
			return Result{}, fmt.Errorf("run %s: %w: %w", spec.Argv[0], ErrNamespaces, errors.Unwrap(err))
		}
		return Result{}, startError(spec.Argv[0], err)
	}
	started := time.Now()
	// The child holds its own copies; ours must go so that EOF can arrive.
	closeAll(stdoutW, stderrW)

	pgid := cmd.Process.Pid
	if spec.OnStart != nil {
		closeAll(cmd.ExtraFiles...)
		proc := Proc{PID: pgid, PGID: pgid, StartedAt: started}
		// Without a start time the process can never be matched by Alive,
		// which errs on the side of leaving an unknown process alone.
		proc.StartTime, _ = ProcStartTime(pgid)
		if err := spec.OnStart(proc); err != nil {
			// The gate sees EOF and ends without running the program.
			closeAll(gateW)
			_ = cmd.Wait()
			_ = StopGroup(pgid, spec.KillGrace)
			out.close()
			closeAll(stdoutR, stderrR)
			return Result{}, fmt.Errorf("run %s: not started: %w", spec.Argv[0], err)
		}
		if _, err := gateW.Write([]byte("\n")); err != nil {
			_ = signalGroup(pgid, syscall.SIGKILL)
		}
		closeAll(gateW)
	}

	aborted := make(chan struct{})
	var abortOnce sync.Once
	var lines *lineSplitter
	if spec.OnStdoutLine != nil && spec.Stdout == nil {
		lines = &lineSplitter{max: spec.MaxLine, emit: spec.OnStdoutLine, starts: spec.LineStarts,
			abort: func() { abortOnce.Do(func() { close(aborted) }) }}
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		buf := newReadBuffer(readBuf)
		if spec.Stdout != nil {
			pumpTo(stdoutR, buf, spec.Stdout, out)
		} else {
			pump(stdoutR, buf, out, spec.OnStdout, lines)
		}
	}()
	if stderrR != nil {
		readers.Add(1)
		go func() { defer readers.Done(); pump(stderrR, newReadBuffer(stderrReadBuf), out, nil, nil) }()
	}
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()

	exited := make(chan struct{})
	go func() {
		// The exit status is read from ProcessState; Wait's error adds nothing
		// a caller acts on (a context error after Cancel, ErrWaitDelay).
		_ = cmd.Wait()
		close(exited)
	}()

	res := supervise(ctx, spec, pgid, started, out, aborted, exited, &termSent, requestStop)

	// Anything still holding the pipes now is outside the group (it escaped
	// with setsid, or was handed the pipe); give the readers the grace period
	// to drain, then close the pipes under them.
	select {
	case <-readersDone:
	case <-time.After(spec.KillGrace):
		closeAll(stdoutR, stderrR)
		<-readersDone
	}
	closeAll(stdoutR, stderrR)

	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
	}
	res.Tail, res.Bytes = out.tail(), out.total()
	if err := out.close(); err != nil {
		return res, fmt.Errorf("run %s: %w", spec.Argv[0], err)
	}
	return res, nil
}

// supervise waits for the main process to exit and its group to be empty,
// running the stop sequence when ctx, a timeout, the idle timer, an abort or
// KillNow asks for it.
func supervise(ctx context.Context, spec Spec, pgid int, started time.Time, out *sink,
	aborted, exited <-chan struct{}, termSent *atomic.Bool, requestStop func()) Result {
	var res Result
	var timeoutC, idleC, killC, pollC <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var idleTimer *time.Timer
	if spec.IdleTimeout > 0 {
		idleTimer = time.NewTimer(spec.IdleTimeout)
		defer idleTimer.Stop()
		idleC = idleTimer.C
	}
	var killTimer *time.Timer
	startKillTimer := func() {
		if killTimer == nil {
			killTimer = time.NewTimer(spec.KillGrace)
			killC = killTimer.C
		}
	}
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	sigkill := func() {
		if signalGroup(pgid, syscall.SIGKILL) == nil {
			res.Killed = true
		}
	}

	done := ctx.Done()
	killNow := spec.KillNow
	mainExited, stopping := false, false
	var killedAt time.Time
	stop := func(reason *bool) {
		if mainExited || stopping {
			return
		}
		stopping = true
		*reason = true
		// exec calls Cmd.Cancel, which sends SIGTERM and SIGCONT to the group.
		requestStop()
		startKillTimer()
	}
	for {
		if mainExited {
			if !GroupAlive(pgid) {
				return res
			}
			// Leftovers of a call that ended get the same stop sequence.
			if !termSent.Load() {
				termSent.Store(true)
				_ = terminateGroup(pgid)
			}
			startKillTimer()
			if !killedAt.IsZero() && time.Since(killedAt) > killWait {
				return res
			}
			pollC = time.After(pollInterval)
		}
		select {
		case <-exited:
			exited = nil
			mainExited = true
			res.Duration = time.Since(started)
		case <-done:
			done = nil
			stop(&res.Canceled)
		case <-timeoutC:
			timeoutC = nil
			stop(&res.TimedOut)
		case <-idleC:
			if quiet := out.quietFor(); quiet >= spec.IdleTimeout {
				idleC = nil
				stop(&res.Idle)
			} else {
				idleTimer.Reset(spec.IdleTimeout - quiet)
			}
		case <-aborted:
			aborted = nil
			stop(&res.Aborted)
		case <-killNow:
			killNow = nil
			sigkill()
			killedAt = time.Now()
		case <-killC:
			killC = nil
			sigkill()
			killedAt = time.Now()
		case <-pollC:
		}
	}
}

type killNowKey struct{}

// WithKillNow returns ctx carrying kill: a process Run starts under it
// without a KillNow of its own is SIGKILLed with its whole group the moment
// kill is closed. It reaches processes started by packages that take only a
// context (runr's git commands), so a second Ctrl+C ends them at once too.
func WithKillNow(ctx context.Context, kill <-chan struct{}) context.Context {
	return context.WithValue(ctx, killNowKey{}, kill)
}

func killNowOf(ctx context.Context) <-chan struct{} {
	kill, _ := ctx.Value(killNowKey{}).(<-chan struct{})
	return kill
}

func withDefaults(spec Spec) Spec {
	if spec.KillGrace <= 0 {
		spec.KillGrace = DefaultKillGrace
	}
	if spec.TailBytes <= 0 {
		spec.TailBytes = DefaultTailBytes
	}
	if spec.MaxLine <= 0 {
		spec.MaxLine = DefaultMaxLine
	}
	return spec
}

// startError marks the failures that mean "this program cannot be run" with
// ErrNotFound, so callers can tell a missing tool from a broken system.
func startError(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "fork/exec" &&
		(errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
			errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.ENOTDIR)) {
		return fmt.Errorf("run %s: %w (%v); check the command and that the file is executable", name, ErrNotFound, pe.Err)
	}
	return fmt.Errorf("run %s: %w", name, err)
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
