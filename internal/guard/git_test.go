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

// TestGitCancelStopsItsGroup: a git cancelled while a program it started
// hangs (here the fsmonitor hook of `git status`) ends with the context's
// error at once, and takes the hook and the hook's own child with it rather
// than leaving them behind or waiting for them to let go of its pipes.
func TestGitCancelStopsItsGroup(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	aside := t.TempDir()
	hook := filepath.Join(aside, "hook.sh")
	childPID := filepath.Join(aside, "child.pid")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nsleep 60 &\necho $! > "+childPID+".tmp\nmv "+childPID+".tmp "+childPID+"\nwait\n"), 0o755))
	gitT(t, dir, "config", "core.fsmonitor", hook)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Changes(ctx, dir)
		done <- err
	}()
	pid := 0
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 {
		if data, err := os.ReadFile(childPID); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		select {
		case err := <-done:
			t.Fatalf("git status returned before its hook was ready: %v", err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "the fsmonitor hook never started")
		time.Sleep(10 * time.Millisecond)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)

	cancel()
	start := time.Now()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(gitKillGrace + 10*time.Second):
		t.Fatal("a cancelled git did not return")
	}
	assert.Less(t, time.Since(start), gitKillGrace, "the hook ended with SIGTERM, without waiting for SIGKILL")
	for testenv.ProcessAlive(pid) {
		require.True(t, time.Now().Before(deadline), "the hook's child %d outlived the cancelled git", pid)
		time.Sleep(10 * time.Millisecond)
	}
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
