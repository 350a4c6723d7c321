// Package proc starts every process runr runs (agents, verification,
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
	"os"
	"os/exec"
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
	IdleTimeout time.Duration // 0: none. No sign of life for this long (life.go): graceful stop, Result.Idle
	KillGrace   time.Duration // between SIGTERM(+SIGCONT) and SIGKILL of the group; 0 means 5s
	TailBytes   int           // bounded tail of the combined output kept in memory; 0 means 64 KiB
	MaxLine     int           // longest stdout line handed to OnStdoutLine (longer ones truncated); 0 means 1 MiB
	// LogCap bounds what this process adds to the log: past it the log
	// keeps the first half and the last half of the output and a line that
	// counts the bytes left out between them (Result.LogOmitted); 0: no cap.
	LogCap int64
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
	// LastSign is the last sign of life seen of a process stopped as
	// Idle (SignOutput, SignCPU, ...), and LastSignAt when.
	LastSign   string
	LastSignAt time.Time

	Tail  []byte // last TailBytes of combined stdout+stderr
	Bytes int64  // total bytes of output
	// LogOmitted is how many bytes of the output the log left out
	// (Spec.LogCap).
	LogOmitted int64
}

// Run starts spec.Argv in its own process group, waits for it and for its
// group to be gone, and reports how it ended. It returns an error only when
// the process could not be started or its log could not be written; a
// non-zero exit is not an error.
func Run(ctx context.Context, spec Spec) (Result, error) {
	spec, path, err := checkSpec(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	out, err := newSink(spec.LogPath, spec.TailBytes, spec.LogCap)
	if err != nil {
		return Result{}, err
	}
	p, err := openPipes(spec)
	if err != nil {
		out.close()
		return Result{}, err
	}
	// The gate's ends are closed on every way out, so a process held at the
	// gate sees EOF and ends without running the program.
	defer p.closeGate()

	stopCtx, requestStop := context.WithCancel(context.Background())
	defer requestStop()
	var termSent atomic.Bool
	cmd, err := command(stopCtx, spec, path, p, &termSent)
	if err == nil {
		err = start(cmd, spec)
	}
	if err != nil {
		out.close()
		closeAll(p.stdoutR, p.stdoutW, p.stderrR, p.stderrW)
		return Result{}, err
	}
	started := time.Now()
	// The child holds its own copies; ours must go so that EOF can arrive.
	closeAll(p.stdoutW, p.stderrW)

	pgid := cmd.Process.Pid
	if spec.OnStart != nil {
		if err := openGate(spec, cmd, p.gateW, started); err != nil {
			out.close()
			closeAll(p.stdoutR, p.stderrR)
			return Result{}, err
		}
	}

	aborted, readersDone := startReaders(spec, p, out)
	exited := waitExit(cmd)

	res := supervise(ctx, spec, pgid, started, out, aborted, exited, &termSent, requestStop)
	drainReaders(p, readersDone, spec.KillGrace)

	exitStatus(&res, cmd.ProcessState)
	res.Tail, res.Bytes = out.tail(), out.total()
	err = out.close()
	res.LogOmitted = out.omitted
	if err != nil {
		return res, fmt.Errorf("run %s: %w", spec.Argv[0], err)
	}
	return res, nil
}

// waitExit waits for the main process in the background; the channel it
// returns is closed once the process has exited.
func waitExit(cmd *exec.Cmd) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		// The exit status is read from ProcessState; Wait's error adds nothing
		// a caller acts on (a context error after Cancel, ErrWaitDelay).
		_ = cmd.Wait()
		close(exited)
	}()
	return exited
}

// exitStatus records in res how the main process ended: its exit code, and
// the signal's name when a signal ended it.
func exitStatus(res *Result, ps *os.ProcessState) {
	if ps != nil {
		res.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
	}
}

// startReaders starts reading the process's output into out, and stdout to
// Spec.Stdout, OnStdout and OnStdoutLine as spec asks. aborted is closed when
// OnStdoutLine asks for the process to stop, readersDone once every stream
// was read to its end.
func startReaders(spec Spec, p *pipes, out *sink) (aborted, readersDone <-chan struct{}) {
	abort := make(chan struct{})
	var abortOnce sync.Once
	var lines *lineSplitter
	if spec.OnStdoutLine != nil && spec.Stdout == nil {
		lines = &lineSplitter{max: spec.MaxLine, emit: spec.OnStdoutLine, starts: spec.LineStarts,
			abort: func() { abortOnce.Do(func() { close(abort) }) }}
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		buf := newReadBuffer(readBuf)
		if spec.Stdout != nil {
			pumpTo(p.stdoutR, buf, spec.Stdout, out)
		} else {
			pump(p.stdoutR, buf, out, spec.OnStdout, lines)
		}
	}()
	if p.stderrR != nil {
		readers.Add(1)
		go func() { defer readers.Done(); pump(p.stderrR, newReadBuffer(stderrReadBuf), out, nil, nil) }()
	}
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	return abort, done
}

// drainReaders waits for the readers to reach the end of the output, then
// closes runr's ends of the pipes.
func drainReaders(p *pipes, readersDone <-chan struct{}, grace time.Duration) {
	// Anything still holding the pipes now is outside the group (it escaped
	// with setsid, or was handed the pipe); give the readers the grace period
	// to drain, then close the pipes under them.
	select {
	case <-readersDone:
	case <-time.After(grace):
		closeAll(p.stdoutR, p.stderrR)
		<-readersDone
	}
	closeAll(p.stdoutR, p.stderrR)
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
	var life *lifeWatch
	var lifeC <-chan time.Time
	if spec.IdleTimeout > 0 {
		idleTimer = time.NewTimer(spec.IdleTimeout)
		defer idleTimer.Stop()
		idleC = idleTimer.C
		if life = newLifeWatch(pgid); life != nil {
			t := time.NewTicker(lifeInterval(spec.IdleTimeout))
			defer t.Stop()
			lifeC = t.C
		}
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
		case <-lifeC:
			life.look(time.Now())
		case <-idleC:
			quiet, sign := out.quietFor(), SignOutput
			if out.total() == 0 {
				sign = SignStart
			}
			if life != nil {
				life.look(time.Now())
				if q := time.Since(life.seen); q < quiet {
					quiet, sign = q, life.what
				}
			}
			if quiet >= spec.IdleTimeout {
				idleC, lifeC = nil, nil
				res.LastSign, res.LastSignAt = sign, time.Now().Add(-quiet)
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

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
