package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

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

// checkSpec fills in spec's defaults and checks that it can be run: a program
// is named, ctx is not done yet, the working directory is a directory and the
// program is found. It returns the spec with its defaults and the program's
// path.
func checkSpec(ctx context.Context, spec Spec) (Spec, string, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return spec, "", errors.New("run: the command is empty; give the program to run")
	}
	spec = withDefaults(spec)
	if spec.KillNow == nil {
		spec.KillNow = killNowOf(ctx)
	}
	if err := ctx.Err(); err != nil {
		return spec, "", fmt.Errorf("run %s: not started: %w", spec.Argv[0], err)
	}
	if spec.Dir != "" {
		if fi, err := os.Stat(spec.Dir); err != nil {
			return spec, "", fmt.Errorf("run %s: working directory: %w", spec.Argv[0], err)
		} else if !fi.IsDir() {
			return spec, "", fmt.Errorf("run %s: working directory %s is not a directory", spec.Argv[0], spec.Dir)
		}
	}
	path, err := LookPath(spec.Argv[0], spec.Dir, spec.Env)
	if err != nil {
		return spec, "", fmt.Errorf("run %w", err)
	}
	return spec, path, nil
}

// pipes holds both ends of the pipes a process is started with: runr reads
// the R ends, the child writes to the W ends, and the gate's shell reads its
// go-ahead from gateR.
type pipes struct {
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File // stderrR is nil when stderr shares stdout's pipe
	gateR, gateW     *os.File // nil without Spec.OnStart
}

// closeGate closes both ends of the gate's pipe, if there is one.
func (p *pipes) closeGate() {
	if p.gateR != nil {
		closeAll(p.gateR, p.gateW)
	}
}

// openPipes opens the pipe for the process's stdout and, when stdout is read
// apart from stderr, a second one for its stderr.
func openPipes(spec Spec) (*pipes, error) {
	// Pipes of our own rather than exec's copying goroutines: Wait then returns
	// as soon as the main process exits, so its leftovers can be stopped at once
	// instead of after a grandchild lets go of the pipe.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("run %s: stdout pipe: %w", spec.Argv[0], err)
	}
	growPipe(stdoutR, pipeSize)
	// When nobody reads stdout apart, both streams share one pipe, so that the
	// log and the tail keep the order the process wrote in (the last line of a
	// failed check is its verdict, not whichever stream was read last).
	p := &pipes{stdoutR: stdoutR, stdoutW: stdoutW, stderrW: stdoutW}
	if spec.Stdout != nil || spec.OnStdoutLine != nil {
		p.stderrR, p.stderrW, err = os.Pipe()
		if err != nil {
			closeAll(stdoutR, stdoutW)
			return nil, fmt.Errorf("run %s: stderr pipe: %w", spec.Argv[0], err)
		}
	}
	return p, nil
}

// command builds the command that runs the program found at path: through
// Spec.Wrap and held at the start gate when spec asks for them, in a process
// group of its own, writing to p's pipes. Cancelling stopCtx sends the group
// SIGTERM and SIGCONT and sets termSent.
func command(stopCtx context.Context, spec Spec, path string, p *pipes, termSent *atomic.Bool) (*exec.Cmd, error) {
	cmd := exec.CommandContext(stopCtx, path, spec.Argv[1:]...)
	cmd.Args[0] = spec.Argv[0]
	args := spec.Argv[1:]
	if len(spec.Wrap) > 0 {
		if reason := unknownFormat(path); reason != "" {
			return nil, fmt.Errorf("run %w", &NotFoundError{Name: spec.Argv[0], Reason: reason})
		}
		args = append(append(append([]string{}, spec.Wrap[1:]...), path), spec.Argv[1:]...)
		path = spec.Wrap[0]
		cmd = exec.CommandContext(stopCtx, path, args...)
	}
	if spec.OnStart != nil {
		var err error
		if cmd, err = gatedCommand(stopCtx, spec, path, args, p); err != nil {
			return nil, err
		}
	}
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin = spec.Stdin
	cmd.Stdout = p.stdoutW
	cmd.Stderr = p.stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if spec.Namespaces {
		if err := newNamespaces(cmd.SysProcAttr); err != nil {
			return nil, fmt.Errorf("run %s: %w: %w", spec.Argv[0], ErrNamespaces, err)
		}
	}
	cmd.Cancel = func() error {
		termSent.Store(true)
		return terminateGroup(cmd.Process.Pid)
	}
	// The group's SIGKILL comes from Run's own timer at the same deadline;
	// WaitDelay also bounds a Stdin copy that never finishes.
	cmd.WaitDelay = spec.KillGrace
	return cmd, nil
}

// gatedCommand builds the command that holds the program at the start gate:
// the gate's shell waits for a line on fd 3, the read end of a new pipe left
// in p, and then becomes the program. path and args are the program and its
// arguments as they would run without the gate (behind Spec.Wrap when set).
func gatedCommand(stopCtx context.Context, spec Spec, path string, args []string, p *pipes) (*exec.Cmd, error) {
	if reason := unknownFormat(path); reason != "" {
		return nil, fmt.Errorf("run %w", &NotFoundError{Name: spec.Argv[0], Reason: reason})
	}
	var err error
	if p.gateR, p.gateW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("run %s: gate pipe: %w", spec.Argv[0], err)
	}
	var cmd *exec.Cmd
	if script, ok := shellScript(path, spec.Argv); ok && len(spec.Wrap) == 0 {
		// `sh -c SCRIPT`: the gate's own shell runs the script once
		// past the gate, which spares an exec.
		cmd = exec.CommandContext(stopCtx, gateShell, append([]string{"-c", gatePrefix + script}, spec.Argv[3:]...)...)
		cmd.Args[0] = spec.Argv[0]
	} else {
		cmd = exec.CommandContext(stopCtx, gateShell, append([]string{"-c", gateScript, spec.Argv[0], path}, args...)...)
	}
	cmd.ExtraFiles = []*os.File{p.gateR}
	return cmd, nil
}

// start starts cmd, telling a kernel that refused the namespaces and a
// program that cannot be run apart from other failures.
func start(cmd *exec.Cmd, spec Spec) error {
	err := cmd.Start()
	if err == nil {
		return nil
	}
	if spec.Namespaces && namespaceRefused(err) {
		return fmt.Errorf("run %s: %w: %w", spec.Argv[0], ErrNamespaces, errors.Unwrap(err))
	}
	return startError(spec.Argv[0], err)
}

// openGate hands the process waiting at the gate to Spec.OnStart and then
// lets it through. When OnStart fails, the gate is closed so that the
// program never runs, the process and its group are waited for, and
// OnStart's error is returned.
func openGate(spec Spec, cmd *exec.Cmd, gateW *os.File, started time.Time) error {
	pgid := cmd.Process.Pid
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
		return fmt.Errorf("run %s: not started: %w", spec.Argv[0], err)
	}
	if _, err := gateW.Write([]byte("\n")); err != nil {
		_ = signalGroup(pgid, syscall.SIGKILL)
	}
	closeAll(gateW)
	return nil
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
