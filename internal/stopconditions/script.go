package stopconditions

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultScriptTimeout bounds a custom_script that sets no timeout.
const DefaultScriptTimeout = 30 * time.Second

// scriptWaitDelay bounds the wait for the script's pipes after it ends or is
// killed, so that a grandchild holding them open cannot hang the evaluation.
const scriptWaitDelay = 2 * time.Second

type customScript struct {
	script  string
	args    []string
	timeout time.Duration
}

func (customScript) Type() string { return TypeCustomScript }

// Evaluate runs the script in its own process group, in the repository, with
// the snapshot's environment; exit status 0 means met. On timeout the whole
// group is killed, so children the script started do not outlive it.
func (c customScript) Evaluate(s *Snapshot) Result {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, c.script, c.args...)
	cmd.Dir = s.RepoDir
	cmd.Env = s.ScriptEnv
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Setpgid made the script's pid its group id.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = scriptWaitDelay
	var tail tailBuffer
	cmd.Stdout = &tail
	cmd.Stderr = &tail

	err := cmd.Run()
	if cmd.Process != nil {
		// Whatever is left of the group when the script ends is killed too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	name := c.describe()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return Result{Met: true, Progress: 1, Message: name + " exited 0"}
	case ctx.Err() == context.DeadlineExceeded:
		return Result{Message: fmt.Sprintf("%s ran past its timeout of %s and was killed", name, c.timeout)}
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		msg := fmt.Sprintf("%s exited %d", name, exitErr.ExitCode())
		if out := lastLine(tail.String()); out != "" {
			msg += ": " + out
		}
		return Result{Message: msg}
	}
	return Result{Message: fmt.Sprintf("%s could not run: %v", name, err)}
}

func (c customScript) describe() string {
	return "script " + strings.Join(append([]string{c.script}, c.args...), " ")
}

// lastLine is the last non-empty line of a script's output, where a check
// usually says why it failed, shortened for a message.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return firstLine(s)
}

// tailBuffer keeps the last bytes written to it, so a script that prints a
// lot cannot grow runr's memory.
type tailBuffer struct{ b []byte }

const tailMax = 4096

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
