package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run's worktree deleted while the agent works stops the run with
// environment_invalid; state.json stays whole and resumable, and a resume
// while the worktree is still gone says so without an agent call.
func TestSupEdgeWorktreeDeletedMidRun(t *testing.T) {
	repo := newRepo(t)
	release := filepath.Join(t.TempDir(), "release")
	p := startRunr(t, repo, nil, "run", "--worktree", "--prompt", "work", "--",
		"fakeagent", "--do", "#1: ready; wait-for "+release+"; write out.txt x", "--do", "write out.txt x; status done")
	p.waitReady(t, 1)
	st := readState(t, repo)
	wt, _ := st["worktree"].(string)
	require.NotEmpty(t, wt)
	require.NoError(t, os.RemoveAll(wt))
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.Equal(t, 69, p.wait(t, 60*time.Second), "stdout: %s\nstderr: %s", &p.stdout, &p.stderr)
	st = readState(t, repo)
	assert.Equal(t, "environment_invalid", stopCode(st))
	assert.Equal(t, true, st["resumable"])
	tick := st["tick"]

	code, stdout, stderr := resRunr(t, repo, nil, "resume", "latest")
	assert.Equal(t, 69, code, "%s\n%s", stdout, stderr)
	st = readState(t, repo)
	assert.Equal(t, "environment_invalid", stopCode(st))
	assert.Equal(t, tick, st["tick"], "no tick without the working directory")
	r, _ := st["stop_reason"].(map[string]any)
	assert.Contains(t, r["message"], wt)
}

// A log write that fails with ENOSPC stops the run with
// environment_invalid, its state.json whole; the run completes once the disk
// has room again. The full disk is real: a small tmpfs mounted over the
// run's logs/ and filled up (mounting needs root).
func TestSupEdgeDiskFullMidRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting the small full filesystem this test needs takes root")
	}
	repo := newRepo(t)
	release := filepath.Join(t.TempDir(), "release")
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--allow-dirty", "--",
		"fakeagent", "--do", "#1: ready; wait-for "+release+"; exit 1", "--do", "print output; write two.txt x; status done")
	p.waitReady(t, 1)
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	logs := filepath.Join(dir, "logs")
	// The first tick's log stays readable beside the mount.
	keep := t.TempDir()
	entries, err := os.ReadDir(logs)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.Rename(filepath.Join(logs, e.Name()), filepath.Join(keep, e.Name())))
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", logs).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", logs).Run() })
	filler := filepath.Join(logs, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 1<<20))
	require.ErrorIs(t, err, syscall.ENOSPC, "the filesystem is full")
	require.NoError(t, f.Close())

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.Equal(t, 69, p.wait(t, 60*time.Second), "stdout: %s\nstderr: %s", &p.stdout, &p.stderr)
	st := readState(t, repo)
	assert.Equal(t, "environment_invalid", stopCode(st))
	assert.Equal(t, true, st["resumable"])

	require.NoError(t, os.Remove(filler))
	code, stdout, stderr := resRunr(t, repo, nil, "resume", "latest")
	assert.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Equal(t, "complete", stopCode(readState(t, repo)))
}
