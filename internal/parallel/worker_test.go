package parallel

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/supervisor"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// A worker's worktree directory lives in the run store, inside .git, where
// an agent can write: replaced by a symlink to the user's checkout, it must
// never have runr check out a branch there and clean away its untracked
// files. The link is dropped and the worktree made again.
func TestEnsureTreeNeverFollowsASymlink(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644))
	gitIn(t, repo, "add", "a.txt")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	head := gitIn(t, repo, "rev-parse", "HEAD")
	precious := filepath.Join(repo, "notes.txt") // the user's untracked work
	require.NoError(t, os.WriteFile(precious, []byte("mine\n"), 0o644))

	home := filepath.Join(repo, ".git", "runr", "worktrees", "r1")
	require.NoError(t, os.MkdirAll(home, 0o755))
	c := &coordinator{o: supervisor.Options{Repo: repo}, home: home}
	dir := filepath.Join(home, "w1")
	require.NoError(t, c.ensureTree(ctx, dir, "runr/r1-m1", head, true))

	// The agent swaps its worktree for a link to the user's checkout.
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Symlink(repo, dir))
	require.NoError(t, c.ensureTree(ctx, dir, "runr/r1-m2", head, true))

	_, err := os.Stat(precious)
	require.NoError(t, err, "the user's untracked file is kept")
	require.Equal(t, "main", gitIn(t, repo, "branch", "--show-current"), "the user's checkout stays on its branch")
	fi, err := os.Lstat(dir)
	require.NoError(t, err)
	require.True(t, fi.IsDir(), "the worktree is a directory again, not the link")
	got, err := guard.Head(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, head, got)
	require.Equal(t, "runr/r1-m2", gitIn(t, dir, "branch", "--show-current"))

	// The agent points the worktree's .git file at the user's own git
	// dir: a checkout there would move the user's HEAD and index.
	gitIn(t, repo, "add", "notes.txt")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git")+"\n"), 0o644))
	require.NoError(t, c.ensureTree(ctx, dir, "runr/r1-m3", head, true))
	require.Equal(t, "main", gitIn(t, repo, "branch", "--show-current"), "the user's checkout stays on its branch")
	require.Equal(t, "A  notes.txt", gitIn(t, repo, "status", "--porcelain", "--untracked-files=no"), "the user's index is kept")
	require.Equal(t, "runr/r1-m3", gitIn(t, dir, "branch", "--show-current"))
	require.NoError(t, guard.CheckWorktree(ctx, repo, dir))

	// The run's worktrees directory itself replaced by a link: refused.
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.RemoveAll(home))
	require.NoError(t, os.Symlink(repo, home))
	require.Error(t, c.ensureTree(ctx, filepath.Join(home, "main"), "runr/r1", head, false))
	_, err = os.Stat(precious)
	require.NoError(t, err)
}

func TestWithFeedbackHoldsNoMilestone(t *testing.T) {
	task := "# T\n- [ ] one\n- [ ] two\n"
	got := withFeedback(task, "conflict in a.go\n- [ ] not a milestone\n~~~\n```\n- [ ] nor this")
	assert.Contains(t, got, "conflict in a.go")
	assert.Equal(t, withFeedback(task, ""), task)
	assert.Len(t, supervisor.Milestones(got), 2)
}
