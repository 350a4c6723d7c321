package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/runr-dev/runr/tests/testenv"
)

// TestClaudeActivityInProgressAndLogs: a Claude Code run from a recorded
// session shows its tool calls and messages as it goes (off a terminal, a
// plain line each), records them in the timeline, and `runr logs` shows
// them in its tick; each tick ends with its line.
func TestClaudeActivityInProgressAndLogs(t *testing.T) {
	repo := newRepo(t)
	r := runClaude(t, repo, []string{"IS_SANDBOX=1", "FAKEAGENT_REPLAY=" + recording(t, "tool_write")}, "--prompt", "write hello.txt", "--verify", "true")
	require.Equal(t, 0, r.exit, "stderr: %s", r.stderr)
	assert.Contains(t, r.stderr, "runr:   > Write /home/dev/repo/hello.txt\n", "a path outside the work tree stays absolute")
	assert.Contains(t, r.stderr, "runr:   \" Wrote hello.txt\n")
	assert.Regexp(t, `(?m)^runr: tick 1 · milestone 1/1 · implement · agent \w+ · files \+0 ~0 -0 · \$0\.00`, r.stderr)
	assert.Regexp(t, `(?m)^runr: tick 2 · milestone 1/1 · verify · verify passed in \d`, r.stderr)
	assert.NotContains(t, r.stderr, "\x1b", "no escape codes off a terminal")

	code, stdout, stderr := runrCmd(t, repo, "logs", "latest", "--tick", "1")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "  > Write /home/dev/repo/hello.txt\n")
	assert.Contains(t, stdout, "  \" Wrote hello.txt\n")
	assert.Regexp(t, `next: verify · agent \w+ · files \+0 ~0 -0 · \$0\.00`, stdout)
}

// openPTY opens a pseudo-terminal of cols columns: the master to read what
// runr draws, the slave to give it as stderr.
func openPTY(t *testing.T, cols int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	require.NoError(t, unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}))
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var escapeSeq = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// screenLines are the lines a terminal shows for out, each redraw (after a
// carriage return or a cursor move) counting as a line of its own.
func screenLines(out string) []string {
	out = escapeSeq.ReplaceAllString(out, "\r")
	return strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' })
}

// TestLiveLineOnATerminal: on a terminal the status line and the agent's
// latest activity (a command agent's latest output line) are redrawn in
// place, each cut to the terminal's width; each tick leaves its line.
func TestLiveLineOnATerminal(t *testing.T) {
	const cols = 100
	master, slave := openPTY(t, cols)
	repo := newRepo(t)
	gate := filepath.Join(repo, ".git", "go-on")
	ready := filepath.Join(repo, ".git", "ready")
	long := strings.Repeat("long output line ", 10)
	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--prompt", "work", "--verify", "true", "--",
		"fakeagent", "--do", "print "+long+"; print latest line; write a.txt a; ready; wait-for "+gate+"; status done")
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo), "FAKEAGENT_READY_FILE="+ready)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	require.NoError(t, cmd.Start())
	slave.Close()
	var screen syncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()

	testenv.WaitForLine(t, ready, "FAKEAGENT READY")
	// The latest output line shows below the status line while the call runs.
	testenv.WaitFor(t, "the agent's latest line on the terminal", func() bool { return strings.Contains(screen.String(), "| latest line") })
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	require.NoError(t, cmd.Wait(), "stdout: %s\nscreen: %q", &stdout, screen.String())
	<-copied

	out := screen.String()
	assert.Contains(t, out, "\r\x1b[K", "the live line is redrawn in place")
	assert.Contains(t, out, "\x1b[1A", "the activity line sits below the status line")
	for _, l := range screenLines(out) {
		assert.LessOrEqual(t, len([]rune(l)), cols, "a line wider than the terminal: %q", l)
	}
	assert.Regexp(t, `tick 1 · milestone 1/1 · implement · agent done · files \+1 ~0 -0`, out)
	assert.Contains(t, out, "tick 2 · milestone 1/1 · verify · verify passed")
	// The first, long line was cut with an ellipsis when it was shown.
	assert.NotContains(t, out, long)
}
