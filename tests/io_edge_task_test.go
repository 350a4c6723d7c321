package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runrBounded runs runr in repo under a memory and a time bound, so that a
// runr that reads without limit fails the test instead of the machine.
func runrBounded(t *testing.T, repo string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// ulimit -v in KiB: 4 GiB of address space is plenty for runr.
	script := `ulimit -v 4194304; exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", script, filepath.Join(binDir, "runr")}, args...)...)
	cmd.Dir = repo
	cmd.Env = testEnv(repo)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "runr %v did not finish within a minute\nstderr: %s", args, &stderr)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("runr %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// writeRepeated writes head and then n bytes c to path in small chunks: a
// large slice would raise this test process's peak RSS, which the children
// it starts inherit in their rusage (TestFloodingAgentKeepsMemoryFlat).
func writeRepeated(t *testing.T, path, head string, c byte, n int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(head)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte{c}, 64<<10)
	for n > 0 {
		k := min(n, len(chunk))
		_, err := f.Write(chunk[:k])
		require.NoError(t, err)
		n -= k
	}
	require.NoError(t, f.Close())
}

// TestTaskInputIsValidated gives runr tasks that are not text, not files, or
// too large, and checks that each is usage_error (64) naming the task and
// what is wrong, before any run is created.
func TestTaskInputIsValidated(t *testing.T) {
	repo := newRepo(t)
	nul := filepath.Join(t.TempDir(), "nul.md")
	require.NoError(t, os.WriteFile(nul, []byte("# Task\n\nfix it\x00\x00\x00binary"), 0o644))
	latin1 := filepath.Join(t.TempDir(), "latin1.md")
	require.NoError(t, os.WriteFile(latin1, []byte("# Caf\xe9 task\n"), 0o644))
	huge := filepath.Join(t.TempDir(), "huge.md")
	writeRepeated(t, huge, "", 'x', 17<<20)
	oneLine := filepath.Join(t.TempDir(), "one-line.md")
	writeRepeated(t, oneLine, "", 'y', 11<<20)
	fifo := filepath.Join(t.TempDir(), "task.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))

	agent := []string{"--", "fakeagent", "--do", "status done"}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"NUL bytes", []string{"--task", nul}, []string{nul, "NUL byte", "offset 14"}},
		{"not UTF-8", []string{"--task", latin1}, []string{latin1, "not valid UTF-8", "offset 5"}},
		{"prompt not UTF-8", []string{"--prompt", "caf\xe9"}, []string{"--prompt", "not valid UTF-8", "offset 3"}},
		{"larger than the limit", []string{"--task", huge}, []string{huge, "16 MiB"}},
		{"/dev/zero", []string{"--task", "/dev/zero"}, []string{"/dev/zero", "not a regular file", "device"}},
		{"a FIFO", []string{"--task", fifo}, []string{fifo, "not a regular file", "FIFO"}},
		{"{prompt} too long for argv", []string{"--task", oneLine, "--", "fakeagent", "--prompt", "{prompt}", "--do", "status done"},
			[]string{"too long for one argument", "{prompt_file}"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run"}, tc.args...)
			if !slices.Contains(tc.args, "--") {
				args = append(args, agent...)
			}
			code, _, stderr := runrBounded(t, repo, args...)
			assert.Equal(t, 64, code, "stderr: %s", stderr)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
			assert.Contains(t, stderr, "(usage_error, exit 64)")
			assert.NoDirExists(t, filepath.Join(repo, ".git", "runr", "runs"), "no run is created for a bad task")
		})
	}
}

// TestLargeTaskStillRuns: a task of 10 MB is within the limit, and through
// {prompt_file} or stdin it reaches the agent.
func TestLargeTaskStillRuns(t *testing.T) {
	repo := newRepo(t)
	task := filepath.Join(t.TempDir(), "large.md")
	writeRepeated(t, task, "# Large task\n\n", 'z', 10_000_000)
	for _, argv := range [][]string{
		{"fakeagent", "--do", "status done"},
		{"fakeagent", "--prompt-file", "{prompt_file}", "--do", "status done"},
	} {
		code, stdout, stderr := runrBounded(t, repo, append([]string{"run", "--quiet", "--task", task, "--"}, argv...)...)
		assert.Equal(t, 0, code, "agent %v\nstdout: %s\nstderr: %s", argv, stdout, stderr)
	}
}
