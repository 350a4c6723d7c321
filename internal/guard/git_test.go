package guard

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

func TestRepositoryInfo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))

	top, err := TopLevel(ctx, filepath.Join(dir, "a", "b"))
	require.NoError(t, err)
	assert.Equal(t, dir, top)

	common, err := CommonDir(ctx, filepath.Join(dir, "a"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, ".git"), common)

	head, err := Head(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, head, "no commits yet")

	commitFiles(t, dir, map[string]string{"f": "f"})
	head, err = Head(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, gitT(t, dir, "rev-parse", "HEAD"), head)
}

func TestOutsideRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	outside := t.TempDir()

	_, err := TopLevel(ctx, outside)
	require.ErrorIs(t, err, ErrNotRepository)
	assert.Contains(t, err.Error(), outside)
	assert.Contains(t, err.Error(), "git init")

	_, err = CommonDir(ctx, outside)
	assert.ErrorIs(t, err, ErrNotRepository)
	_, err = Head(ctx, outside)
	assert.ErrorIs(t, err, ErrNotRepository)

	_, err = TopLevel(ctx, filepath.Join(outside, "missing"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing")
}

func TestIsIgnored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{".gitignore": "*.log\n"})
	writeFile(t, dir, "tracked.log", "forced\n")
	gitT(t, dir, "add", "--force", "tracked.log")
	gitT(t, dir, "commit", "--quiet", "-m", "force a tracked log")

	for path, want := range map[string]bool{"x.log": true, "deep/y.log": true, "x.txt": false, "tracked.log": false} {
		got, err := IsIgnored(ctx, dir, path)
		require.NoError(t, err)
		assert.Equal(t, want, got, path)
	}
	_, err := IsIgnored(ctx, t.TempDir(), "x")
	assert.Error(t, err)
}

func TestGitCancelled(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Changes(ctx, dir)
	assert.ErrorIs(t, err, context.Canceled)
}

// hangingGit puts a stand-in git on PATH that starts a child, writes its pid
// and waits for it: with the repository's programs turned off, nothing a
// repository plants can make the real git hang any more. It returns the file
// the child's pid appears in.
func hangingGit(t *testing.T) string {
	aside := t.TempDir()
	childPID := filepath.Join(aside, "child.pid")
	fake := "#!/bin/sh\nsleep 60 &\necho $! > " + childPID + ".tmp\nmv " + childPID + ".tmp " + childPID + "\nwait\n"
	require.NoError(t, os.WriteFile(filepath.Join(aside, "git"), []byte(fake), 0o755))
	t.Setenv("PATH", aside+string(os.PathListSeparator)+os.Getenv("PATH"))
	return childPID
}

// readPID polls for the pid file of hangingGit.
func readPID(t *testing.T, path string, done <-chan error) int {
	deadline := time.Now().Add(20 * time.Second)
	for {
		if data, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
				return pid
			}
		}
		if done != nil {
			select {
			case err := <-done:
				t.Fatalf("git returned before its child was ready: %v", err)
			default:
			}
		}
		require.True(t, time.Now().Before(deadline), "the stand-in git never started")
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone polls until process pid has ended.
func waitGone(t *testing.T, pid int) {
	deadline := time.Now().Add(20 * time.Second)
	for testenv.ProcessAlive(pid) {
		require.True(t, time.Now().Before(deadline), "the child %d outlived the stopped git", pid)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGitCancelStopsItsGroup: a git cancelled while it hangs (a second
// Ctrl+C) ends with the context's error at once, and takes its own child
// with it rather than leaving it behind or waiting for it to let go of the
// pipes.
func TestGitCancelStopsItsGroup(t *testing.T) {
	dir := newRepo(t, true)
	childPID := hangingGit(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Changes(ctx, dir)
		done <- err
	}()
	pid := readPID(t, childPID, done)

	cancel()
	start := time.Now()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(gitKillGrace + 10*time.Second):
		t.Fatal("a cancelled git did not return")
	}
	assert.Less(t, time.Since(start), gitKillGrace, "git ended with SIGTERM, without waiting for SIGKILL")
	waitGone(t, pid)
}

// TestGitDeadlineStopsItsGroup: a git still running at its context's
// deadline (the run's time budget) is stopped with its group and reports
// the deadline.
func TestGitDeadlineStopsItsGroup(t *testing.T) {
	dir := newRepo(t, true)
	childPID := hangingGit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := TreeHash(ctx, dir)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	waitGone(t, readPID(t, childPID, nil))
}

// TestGitMissing: without git on PATH every command says so with
// ErrGitMissing.
func TestGitMissing(t *testing.T) {
	dir := newRepo(t, true)
	t.Setenv("PATH", t.TempDir())
	_, err := TopLevel(context.Background(), dir)
	require.ErrorIs(t, err, ErrGitMissing)
	assert.Contains(t, err.Error(), "install git")
}
