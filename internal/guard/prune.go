package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Reasons RemoveWorktree leaves a worktree in place.
var (
	// ErrWorktreeDirty: the worktree has uncommitted changes or untracked
	// files, which removing it would lose.
	ErrWorktreeDirty = errors.New("the worktree has uncommitted changes")
	// ErrNotWorktree: the path is not a working tree git lists for the
	// repository (or not a plain directory).
	ErrNotWorktree = errors.New("not a worktree of this repository")
)

// RemoveWorktree removes the clean worktree at path of the repository that
// holds repo, as `git worktree remove` (without --force), so that git's
// list of worktrees forgets it too. Its branch stays. A worktree with
// uncommitted changes or untracked files is left as it is
// (ErrWorktreeDirty), and so is a path that is a symlink or that git does
// not list as a worktree of repo (ErrNotWorktree). Ignored files go with
// the worktree, as with git.
func RemoveWorktree(ctx context.Context, repo, path string) error {
	if err := CheckWorktreeRemovable(ctx, repo, path); err != nil {
		return err
	}
	if _, err := git(ctx, repo, "worktree", "remove", "--", path); err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	return nil
}

// CheckWorktreeRemovable says what RemoveWorktree would say, and removes
// nothing.
func CheckWorktreeRemovable(ctx context.Context, repo, path string) error {
	if err := checkWorktree(ctx, repo, path); err != nil {
		return err
	}
	changes, err := Changes(ctx, path)
	if err != nil {
		return fmt.Errorf("worktree %s: %w", path, err)
	}
	if len(changes) > 0 {
		return fmt.Errorf("%s: %w (%d files)", path, ErrWorktreeDirty, len(changes))
	}
	return nil
}

// checkWorktree refuses a path that is not a plain directory git lists
// among the worktrees of repo, other than the main one.
func checkWorktree(ctx context.Context, repo, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("worktree %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w (it is not a directory)", path, ErrNotWorktree)
	}
	paths, err := Worktrees(ctx, repo)
	if err != nil {
		return err
	}
	want := realPath(path)
	for i, p := range paths {
		if realPath(p) == want {
			if i == 0 {
				return fmt.Errorf("%s: %w (it is the main working tree)", path, ErrNotWorktree)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: %w (`git worktree list` in %s does not show it)", path, ErrNotWorktree, repo)
}

// realPath resolves symlinks in the directories above a path (macOS's /var
// is /private/var), so paths from git and from the store compare equal.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// DeleteBranch deletes the local branch name of repo, as `git branch -D`,
// and reports whether there was one. Git refuses a branch checked out in
// any worktree.
func DeleteBranch(ctx context.Context, repo, name string) (bool, error) {
	ok, err := BranchExists(ctx, repo, name)
	if err != nil || !ok {
		return false, err
	}
	if _, err := git(ctx, repo, "branch", "-D", "--", name); err != nil {
		return false, fmt.Errorf("delete branch %s: %w", name, err)
	}
	return true, nil
}

// BranchExists reports whether repo has the local branch name.
func BranchExists(ctx context.Context, repo, name string) (bool, error) {
	_, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+name)
	switch exitCode(err) {
	case -1:
		return err == nil, err
	case 1:
		return false, nil
	default:
		return false, fmt.Errorf("look up branch %s: %w", name, err)
	}
}
