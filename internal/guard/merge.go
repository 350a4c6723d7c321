package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MilestoneTrailer is the trailer of the commit that merges a milestone into
// a parallel run's integration branch: the branch holding a commit with
// "Runr-Milestone: n" has milestone n, so a merge is never made twice.
const MilestoneTrailer = "Runr-Milestone"

// AddWorktreeAt checks out a new branch at commit start of repo into path,
// as `git worktree add -B branch path start`: a branch left by an earlier
// attempt is moved to start.
func AddWorktreeAt(ctx context.Context, repo, path, branch, start string) error {
	// --force: the branch may still be checked out in an idle worker's
	// worktree, which never commits on it again.
	if _, err := git(ctx, repo, "worktree", "add", "--quiet", "--force", "-B", branch, path, start); err != nil {
		return fmt.Errorf("create worktree %s on branch %s at %s: %w", path, branch, short(start), err)
	}
	return nil
}

// SwitchTo checks out, in the existing worktree at dir, branch reset to
// commit start (created when missing), discarding whatever the tree held.
func SwitchTo(ctx context.Context, dir, branch, start string) error {
	if _, err := git(ctx, dir, "checkout", "--quiet", "--force", "--ignore-other-worktrees", "-B", branch, start); err != nil {
		return fmt.Errorf("check out %s at %s in %s: %w", branch, short(start), dir, err)
	}
	if _, err := git(ctx, dir, "clean", "-q", "-f", "-f", "-d"); err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	return nil
}

// ResetTo moves the branch checked out at dir, its index and its work tree
// to commit, and removes untracked files: the tree is exactly commit's.
func ResetTo(ctx context.Context, dir, commit string) error {
	if _, err := git(ctx, dir, "reset", "--quiet", "--hard", commit); err != nil {
		return fmt.Errorf("reset %s to %s: %w", dir, short(commit), err)
	}
	if _, err := git(ctx, dir, "clean", "-q", "-f", "-d"); err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	return nil
}

// SquashMerge merges the changes of ref since its merge base with HEAD
// into the work tree and index at dir without committing (`git merge
// --squash`). A textual conflict returns the conflicting paths and no
// error; the tree is then left with the conflict for the caller to undo
// (ResetTo HEAD).
func SquashMerge(ctx context.Context, dir, ref string) ([]string, error) {
	args, err := identityArgs(ctx, dir)
	if err != nil {
		return nil, err
	}
	args = append(args, "-c", "merge.renames=true", "merge", "--quiet", "--squash", "--no-verify", ref)
	_, mergeErr := git(ctx, dir, args...)
	if mergeErr == nil {
		return nil, nil
	}
	out, err := git(ctx, dir, "diff", "--name-only", "--diff-filter=U", "-z")
	if err != nil {
		return nil, fmt.Errorf("list the conflicts of merging %s in %s: %w", ref, dir, err)
	}
	var files []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("merge %s in %s: %w", ref, dir, mergeErr)
	}
	return files, nil
}

// CommitMilestone commits what is staged at dir (after SquashMerge) with
// message and the trailer naming milestone, and returns the commit. An
// empty change still makes its commit: the trailer records the merge.
func CommitMilestone(ctx context.Context, dir, message string, milestone int) (string, error) {
	args, err := identityArgs(ctx, dir)
	if err != nil {
		return "", err
	}
	msg := strings.TrimRight(message, "\n") + "\n\n" + MilestoneTrailer + ": " + strconv.Itoa(milestone) + "\n"
	args = append(args, "-c", "commit.gpgsign=false", "-c", "core.hooksPath="+os.DevNull,
		"commit", "--quiet", "--no-verify", "--allow-empty", "-m", msg)
	if _, err := git(ctx, dir, args...); err != nil {
		return "", fmt.Errorf("commit milestone %d in %s: %w", milestone, dir, err)
	}
	return Head(ctx, dir)
}

// MergedMilestones returns the milestones whose trailer is on the branch
// checked out at dir since base (exclusive), with their commits.
func MergedMilestones(ctx context.Context, dir, base string) (map[int]string, error) {
	rng := "HEAD"
	if base != "" {
		rng = base + "..HEAD"
	}
	out, err := git(ctx, dir, "log", "--no-color", "--format=%H%x00%(trailers:key="+MilestoneTrailer+",valueonly,separator=%x2C)", rng)
	if err != nil {
		return nil, fmt.Errorf("read the merged milestones in %s: %w", dir, err)
	}
	merged := map[int]string{}
	for _, line := range strings.Split(string(out), "\n") {
		sha, values, ok := strings.Cut(line, "\x00")
		if !ok {
			continue
		}
		for _, v := range strings.Split(values, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				if _, seen := merged[n]; !seen {
					merged[n] = sha
				}
			}
		}
	}
	return merged, nil
}

// Diff is the patch from base to ref (both commits), for a milestone's
// feedback; at most limit bytes.
func Diff(ctx context.Context, dir, base, ref string, limit int) (string, error) {
	out, err := git(ctx, dir, "diff", "--no-color", "--no-ext-diff", "--no-textconv", base, ref)
	if err != nil {
		return "", fmt.Errorf("diff %s..%s in %s: %w", short(base), short(ref), dir, err)
	}
	if len(out) > limit {
		out = append(out[:limit], "\n[... cut]\n"...)
	}
	return string(out), nil
}

// MergeBase is the best common ancestor of a and b.
func MergeBase(ctx context.Context, dir, a, b string) (string, error) {
	out, err := git(ctx, dir, "merge-base", a, b)
	if err != nil {
		return "", fmt.Errorf("merge base of %s and %s in %s: %w", short(a), short(b), dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// RevParse resolves ref to a commit at dir.
func RevParse(ctx context.Context, dir, ref string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolve %s in %s: %w", ref, dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// DiscardWorktree removes a worktree runr made for a parallel run's own
// use, whatever it holds (`git worktree remove --force --force`), and has
// git forget worktrees whose directory is gone. Unlike RemoveWorktree it is
// for trees whose work is merged or can be made again, never the user's.
func DiscardWorktree(ctx context.Context, repo, path string) error {
	if _, err := git(ctx, repo, "worktree", "remove", "--force", "--force", "--", path); err != nil {
		if _, statErr := os.Stat(path); statErr == nil {
			return fmt.Errorf("remove worktree %s: %w", path, err)
		}
	}
	if _, err := git(ctx, repo, "worktree", "prune"); err != nil {
		return fmt.Errorf("prune the worktrees of %s: %w", repo, err)
	}
	return nil
}

// CheckWorktree reports an error unless dir is one of repo's linked
// worktrees as git made it: its top level is dir, its common git dir is
// repo's and its own git dir one of that dir's worktrees/ entries. A
// worktree's .git is a file its tree's writer can rewrite, to point git at
// another repository's git dir (the user's checkout's own, say), where a
// checkout would move that repository's HEAD and index.
func CheckWorktree(ctx context.Context, repo, dir string) error {
	common, err := CommonDir(ctx, repo)
	if err != nil {
		return err
	}
	p, err := gitPaths(ctx, dir)
	if err != nil {
		return err
	}
	same := func(a, b string) bool {
		ra, errA := filepath.EvalSymlinks(a)
		rb, errB := filepath.EvalSymlinks(b)
		return errA == nil && errB == nil && ra == rb
	}
	own, err := filepath.EvalSymlinks(p.own)
	if err != nil {
		return fmt.Errorf("%s: its git dir %s: %w", dir, p.own, err)
	}
	worktrees, err := filepath.EvalSymlinks(filepath.Join(common, "worktrees"))
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if !same(p.top, dir) || !same(p.common, common) || filepath.Dir(own) != worktrees {
		return fmt.Errorf("%s is not a worktree of %s as git made it (top level %s, git dir %s, common dir %s)", dir, repo, p.top, p.own, p.common)
	}
	return nil
}
