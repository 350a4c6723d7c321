package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// worktreeRepo is a committed repository with a worktree on branch
// runr/x under its .git, as a --worktree run makes.
func worktreeRepo(t *testing.T) (repo, wt string) {
	t.Helper()
	repo = newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "a\n", ".gitignore": "*.o\n"})
	wt = filepath.Join(repo, ".git", "runr", "worktrees", "x")
	require.NoError(t, AddWorktree(context.Background(), repo, wt, "runr/x"))
	return repo, wt
}

func TestRemoveWorktreeKeepsTheBranchAndGitForgetsIt(t *testing.T) {
	ctx := context.Background()
	repo, wt := worktreeRepo(t)
	writeFile(t, wt, "build.o", "ignored output goes with the worktree")
	require.NoError(t, CheckWorktreeRemovable(ctx, repo, wt))
	require.NoError(t, RemoveWorktree(ctx, repo, wt))
	assert.NoDirExists(t, wt)
	paths, err := Worktrees(ctx, repo)
	require.NoError(t, err)
	assert.Equal(t, []string{repo}, paths, "git's list no longer has it")
	ok, err := BranchExists(ctx, repo, "runr/x")
	require.NoError(t, err)
	assert.True(t, ok, "the branch stays")

	deleted, err := DeleteBranch(ctx, repo, "runr/x")
	require.NoError(t, err)
	assert.True(t, deleted)
	ok, err = BranchExists(ctx, repo, "runr/x")
	require.NoError(t, err)
	assert.False(t, ok)
	deleted, err = DeleteBranch(ctx, repo, "runr/x")
	require.NoError(t, err)
	assert.False(t, deleted, "no branch, nothing deleted")
}

func TestRemoveWorktreeLeavesADirtyOne(t *testing.T) {
	ctx := context.Background()
	for name, dirty := range map[string]func(wt string){
		"untracked": func(wt string) { writeFile(t, wt, "new.txt", "work") },
		"modified":  func(wt string) { writeFile(t, wt, "a.txt", "changed\n") },
		"staged": func(wt string) {
			writeFile(t, wt, "a.txt", "staged\n")
			gitT(t, wt, "add", "a.txt")
		},
	} {
		t.Run(name, func(t *testing.T) {
			repo, wt := worktreeRepo(t)
			dirty(wt)
			require.ErrorIs(t, CheckWorktreeRemovable(ctx, repo, wt), ErrWorktreeDirty)
			require.ErrorIs(t, RemoveWorktree(ctx, repo, wt), ErrWorktreeDirty)
			assert.DirExists(t, wt)
			paths, err := Worktrees(ctx, repo)
			require.NoError(t, err)
			assert.Len(t, paths, 2)
			// Git refuses to delete a branch a worktree has checked out.
			_, err = DeleteBranch(ctx, repo, "runr/x")
			assert.Error(t, err)
		})
	}
}

func TestRemoveWorktreeRefusesWhatIsNotAWorktree(t *testing.T) {
	ctx := context.Background()
	repo, _ := worktreeRepo(t)
	outside := t.TempDir()
	writeFile(t, outside, "precious.txt", "keep me")

	link := filepath.Join(repo, ".git", "runr", "worktrees", "link")
	require.NoError(t, os.Symlink(outside, link))
	assert.ErrorIs(t, RemoveWorktree(ctx, repo, link), ErrNotWorktree)

	plain := filepath.Join(repo, ".git", "runr", "worktrees", "plain")
	require.NoError(t, os.Mkdir(plain, 0o755))
	assert.ErrorIs(t, RemoveWorktree(ctx, repo, plain), ErrNotWorktree)
	assert.ErrorIs(t, RemoveWorktree(ctx, repo, repo), ErrNotWorktree, "never the main working tree")

	assert.FileExists(t, filepath.Join(outside, "precious.txt"))
	assert.DirExists(t, plain)
}
