package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Identity runr commits as when git has none configured.
const (
	FallbackName  = "runr"
	FallbackEmail = "runr@localhost"
)

// AddWorktree checks out a new branch at HEAD of repo into path, as
// `git worktree add -b branch path HEAD`. A repository with no commits has no
// HEAD to branch from, which is ErrNoCommits.
func AddWorktree(ctx context.Context, repo, path, branch string) error {
	head, err := Head(ctx, repo)
	if err != nil {
		return err
	}
	if head == "" {
		return fmt.Errorf("create worktree %s: %w: commit once in %s, then run again", path, ErrNoCommits, repo)
	}
	if _, err := git(ctx, repo, "worktree", "add", "--quiet", "-b", branch, path, "HEAD"); err != nil {
		return fmt.Errorf("create worktree %s on new branch %s: %w", path, branch, err)
	}
	return nil
}

// Worktrees lists the paths of the working trees git knows for the
// repository of dir (`git worktree list`), the main one first.
func Worktrees(ctx context.Context, dir string) ([]string, error) {
	out, err := git(ctx, dir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("list the worktrees of %s: %w", dir, err)
	}
	var paths []string
	for _, line := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			paths = append(paths, filepath.FromSlash(p))
		}
	}
	return paths, nil
}

// CommitAll stages every change of the working tree at dir (git add --all),
// except the exclude paths (relative to the repository root; changes already
// staged for them stay staged), and commits with message. Files git cannot
// add (unreadable ones, names git refuses) stay out of the commit, untracked. It returns the new
// commit, or "" when there was nothing to commit. The commit runs no hooks and
// is not signed, whatever the git config says. When git has no user.name or
// user.email, the commit is made as runr <runr@localhost> through -c options
// for this command only; the user's git config is never written.
func CommitAll(ctx context.Context, dir, message string, exclude []string) (string, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return "", err
	}
	if err := addAll(ctx, gitCmd{dir: top}, exclude); err != nil {
		return "", fmt.Errorf("stage the changes in %s: %w", top, err)
	}

	_, err = git(ctx, top, "diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv")
	switch exitCode(err) {
	case -1:
		if err != nil {
			return "", fmt.Errorf("look for staged changes in %s: %w", top, err)
		}
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("look for staged changes in %s: %w", top, err)
	}

	args, err := identityArgs(ctx, top)
	if err != nil {
		return "", err
	}
	// A checkpoint records work the run's own verify commands approved, in a
	// run nobody attends: the user's hooks (pre-commit, commit-msg, even
	// prepare-commit-msg, which --no-verify does not skip) must not refuse it
	// or wait on something, and signing must not wait for a passphrase on a
	// terminal. Both are off for this command only.
	args = append(args, "-c", "commit.gpgsign=false", "-c", "core.hooksPath="+os.DevNull,
		"commit", "--quiet", "--no-verify", "-m", message)
	if _, err := git(ctx, top, args...); err != nil {
		return "", fmt.Errorf("commit in %s: %w", top, err)
	}
	sha, err := Head(ctx, top)
	if err != nil {
		return "", fmt.Errorf("read the new commit in %s: %w", top, err)
	}
	return sha, nil
}

// identityArgs returns -c options that supply runr's identity for whatever
// part of it git has no source for (its config, or the environment variables
// git reads before and after it).
func identityArgs(ctx context.Context, dir string) ([]string, error) {
	var args []string
	name, err := configValue(ctx, dir, "user.name")
	if err != nil {
		return nil, err
	}
	if name == "" && (os.Getenv("GIT_AUTHOR_NAME") == "" || os.Getenv("GIT_COMMITTER_NAME") == "") {
		args = append(args, "-c", "user.name="+FallbackName)
	}
	email, err := configValue(ctx, dir, "user.email")
	if err != nil {
		return nil, err
	}
	envEmail := os.Getenv("EMAIL") != "" || (os.Getenv("GIT_AUTHOR_EMAIL") != "" && os.Getenv("GIT_COMMITTER_EMAIL") != "")
	if email == "" && !envEmail {
		args = append(args, "-c", "user.email="+FallbackEmail)
	}
	return args, nil
}

// configValue reads one git config value, "" when it is unset.
func configValue(ctx context.Context, dir, key string) (string, error) {
	out, err := git(ctx, dir, "config", "--get", key)
	if exitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read git config %s in %s: %w", key, dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
