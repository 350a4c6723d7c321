package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorktreeAndCommitAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"main.go": "package main\n"})
	mainHead := gitT(t, repo, "rev-parse", "HEAD")

	wt := filepath.Join(t.TempDir(), "wt")
	require.NoError(t, AddWorktree(ctx, repo, wt, "runr/20261121T230017Z-3f9a1c"))
	assert.FileExists(t, filepath.Join(wt, "main.go"))
	assert.Equal(t, "runr/20261121T230017Z-3f9a1c", gitT(t, wt, "rev-parse", "--abbrev-ref", "HEAD"))

	common, err := CommonDir(ctx, wt)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(repo, ".git"), common, "a worktree shares the common dir")

	writeFile(t, wt, "main.go", "package main // changed\n")
	writeFile(t, wt, "new dir/new file.go", "package newdir\n")
	writeFile(t, wt, "TASK.md", "- [ ] task\n")
	sha, err := CommitAll(ctx, wt, "runr: milestone 1", []string{"TASK.md"})
	require.NoError(t, err)
	require.Len(t, sha, 40)
	assert.Equal(t, gitT(t, wt, "rev-parse", "HEAD"), sha)
	assert.Equal(t, "runr: milestone 1", gitT(t, wt, "log", "-1", "--format=%s"))
	assert.Equal(t, "Test User <test@example.com>", gitT(t, wt, "log", "-1", "--format=%an <%ae>"))
	assert.Equal(t, "main.go\nnew dir/new file.go", gitT(t, wt, "-c", "core.quotePath=false", "show", "--name-only", "--format=", "HEAD"))

	changes, err := Changes(ctx, wt)
	require.NoError(t, err)
	assert.Equal(t, []Change{{Path: "TASK.md", Kind: KindUntracked}}, changes, "the excluded file stays out")

	assert.Equal(t, mainHead, gitT(t, repo, "rev-parse", "HEAD"), "the main checkout is untouched")

	again, err := CommitAll(ctx, wt, "nothing", []string{"TASK.md"})
	require.NoError(t, err)
	assert.Empty(t, again, "nothing to commit")
	assert.Equal(t, sha, gitT(t, wt, "rev-parse", "HEAD"))
}

func TestCommitAllWithoutIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, false)
	writeFile(t, repo, "first.txt", "1\n")

	// The first commit of a repository, made with no identity configured.
	sha, err := CommitAll(ctx, repo, "checkpoint", nil)
	require.NoError(t, err)
	require.NotEmpty(t, sha)
	assert.Equal(t, "runr <runr@localhost>", gitT(t, repo, "log", "-1", "--format=%an <%ae>"))
	assert.Equal(t, "runr <runr@localhost>", gitT(t, repo, "log", "-1", "--format=%cn <%ce>"))

	_, err = configValue(ctx, repo, "user.name")
	require.NoError(t, err)
	for _, key := range []string{"user.name", "user.email"} {
		v, err := configValue(ctx, repo, key)
		require.NoError(t, err)
		assert.Empty(t, v, "%s stays unset", key)
	}
	_, err = os.Stat(filepath.Join(os.Getenv("HOME"), ".gitconfig"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no global config written")

	writeFile(t, repo, "second.txt", "2\n")
	wt := filepath.Join(t.TempDir(), "wt")
	require.NoError(t, AddWorktree(ctx, repo, wt, "runr/x"))
	writeFile(t, wt, "in-worktree.txt", "w\n")
	sha2, err := CommitAll(ctx, wt, "checkpoint 2", nil)
	require.NoError(t, err)
	assert.NotEqual(t, sha, sha2)
	assert.Equal(t, "runr <runr@localhost>", gitT(t, wt, "log", "-1", "--format=%an <%ae>"))
}

func TestCommitAllNothingToCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := newRepo(t, true)
	sha, err := CommitAll(ctx, empty, "nothing", nil)
	require.NoError(t, err)
	assert.Empty(t, sha, "an empty repository has nothing to commit")

	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{".gitignore": "*.log\n", "a": "a"})
	writeFile(t, repo, "x.log", "ignored")
	writeFile(t, repo, "runr.yaml", "excluded")
	sha, err = CommitAll(ctx, repo, "nothing", []string{"runr.yaml"})
	require.NoError(t, err)
	assert.Empty(t, sha, "ignored and excluded files are not committed")
}

func TestAddWorktreeErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := newRepo(t, true)
	err := AddWorktree(ctx, empty, filepath.Join(t.TempDir(), "wt"), "runr/x")
	require.ErrorIs(t, err, ErrNoCommits)
	assert.Contains(t, err.Error(), "commit once")

	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a": "a"})
	require.NoError(t, AddWorktree(ctx, repo, filepath.Join(t.TempDir(), "one"), "runr/same"))
	err = AddWorktree(ctx, repo, filepath.Join(t.TempDir(), "two"), "runr/same")
	require.Error(t, err, "the branch exists already")
	assert.Contains(t, err.Error(), "runr/same")
}

// A checkpoint commit is runr's own record of approved work in an unattended
// run: the user's commit hooks do not judge it (the run's verify commands
// did) and it is not signed (nobody is there to type a passphrase, and a
// pinentry waiting on the terminal would hang the run).
func TestCommitAllSkipsHooksAndSigning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "a\n"})

	ran := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\necho \"$0\" >> " + ran + "\nexit 1\n"
	for _, hook := range []string{"pre-commit", "commit-msg", "prepare-commit-msg"} {
		require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", hook), []byte(script), 0o755))
	}
	gpg := filepath.Join(t.TempDir(), "fake-gpg")
	require.NoError(t, os.WriteFile(gpg, []byte(script), 0o755))
	gitT(t, repo, "config", "commit.gpgsign", "true")
	gitT(t, repo, "config", "gpg.program", gpg)

	writeFile(t, repo, "a.txt", "changed\n")
	sha, err := CommitAll(ctx, repo, "runr: milestone 1", nil)
	require.NoError(t, err)
	require.Len(t, sha, 40)
	assert.Equal(t, "runr: milestone 1", gitT(t, repo, "log", "-1", "--format=%s"))
	assert.Empty(t, sigOf(t, repo), "the commit is not signed")
	_, err = os.Stat(ran)
	assert.ErrorIs(t, err, os.ErrNotExist, "no hook or signing program ran")
	assert.Equal(t, "true", gitT(t, repo, "config", "commit.gpgsign"), "the user's config is left as it was")
}

// sigOf returns the gpgsig header of HEAD, "" when it has none.
func sigOf(t *testing.T, repo string) string {
	t.Helper()
	for _, line := range strings.Split(gitT(t, repo, "cat-file", "commit", "HEAD"), "\n") {
		if strings.HasPrefix(line, "gpgsig") {
			return line
		}
	}
	return ""
}

// A checkpoint commits exactly the tree the guard judged: a file written
// after the look (by a process still running) makes no commit and leaves
// HEAD and the index as they were; the judged tree is committed as its
// bytes are, whatever the repository's attributes ask git to convert, with
// the executable bit the guard saw.
func TestCommitJudged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "a\n", "tool.sh": "echo\n"})
	snap, err := TakeSnapshot(ctx, repo)
	require.NoError(t, err)
	tr, err := snap.NewTracker(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	head := gitT(t, repo, "rev-parse", "HEAD")

	writeFile(t, repo, ".gitattributes", "*.txt text eol=crlf\n")
	writeFile(t, repo, "a.txt", "judged\r\n")
	require.NoError(t, os.Chmod(filepath.Join(repo, "tool.sh"), 0o755))
	look, err := tr.Look(ctx, head, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{".gitattributes", "a.txt", "tool.sh"}, look.Changed)
	judged := tr.Judged(ctx, nil)

	indexBefore, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	require.NoError(t, err)
	writeFile(t, repo, "late.txt", "written after the look\n")
	_, err = CommitJudged(ctx, repo, "checkpoint", nil, judged)
	require.ErrorIs(t, err, ErrChangedAfterLook)
	assert.Contains(t, err.Error(), "late.txt")
	assert.Equal(t, head, gitT(t, repo, "rev-parse", "HEAD"), "no commit")
	indexAfter, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	require.NoError(t, err)
	assert.Equal(t, indexBefore, indexAfter, "the index as it was")

	require.NoError(t, os.Remove(filepath.Join(repo, "late.txt")))
	writeFile(t, repo, "a.txt", "changed again\r\n")
	_, err = CommitJudged(ctx, repo, "checkpoint", nil, judged)
	require.ErrorIs(t, err, ErrChangedAfterLook, "a changed content")
	writeFile(t, repo, "a.txt", "judged\r\n")

	sha, err := CommitJudged(ctx, repo, "checkpoint", nil, judged)
	require.NoError(t, err)
	assert.Equal(t, sha, gitT(t, repo, "rev-parse", "HEAD"))
	assert.Equal(t, head, gitT(t, repo, "rev-parse", "HEAD~1"))
	assert.Equal(t, gitT(t, repo, "hash-object", "--no-filters", "a.txt"), gitT(t, repo, "rev-parse", "HEAD:a.txt"),
		"the bytes as judged, not converted")
	assert.Contains(t, gitT(t, repo, "ls-tree", "HEAD", "tool.sh"), "100755")
	assert.Empty(t, gitT(t, repo, "diff", "--cached", "--name-only"), "the index holds the commit")
}

// A file rewritten in the second its index entry was written, to the same
// size, still reaches the commit: the staging copy of the index keeps the
// index's time, so git does not trust the entry's stat data (git compares
// times to the second).
func TestCommitJudgedSameSecondRewrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "start\n"})
	snap, err := TakeSnapshot(ctx, repo)
	require.NoError(t, err)
	tr, err := snap.NewTracker(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	// The index and the file written in one second: the first 300ms of
	// one, waited for (a test that misses it still passes; it cannot
	// fail wrongly).
	for time.Now().Nanosecond() > 300e6 {
		time.Sleep(10 * time.Millisecond)
	}
	writeFile(t, repo, "shared.txt", "one\n")
	gitT(t, repo, "add", "shared.txt")
	gitT(t, repo, "commit", "-q", "-m", "one")
	writeFile(t, repo, "shared.txt", "two\n")
	written := time.Now().Unix()
	// The commit is made in a later second, as a checkpoint is.
	for time.Now().Unix() == written {
		time.Sleep(20 * time.Millisecond)
	}
	head := gitT(t, repo, "rev-parse", "HEAD")
	_, err = tr.Look(ctx, head, nil)
	require.NoError(t, err)
	_, err = CommitJudged(ctx, repo, "checkpoint", nil, tr.Judged(ctx, nil))
	require.NoError(t, err)
	assert.Equal(t, "two", gitT(t, repo, "show", "HEAD:shared.txt"))
}

// A file the start's ignore rules ignored, which a new rule lets git add,
// was never judged: the commit leaves it out, untracked, and takes the
// rest.
func TestCommitJudgedLeavesOutWhatTheStartIgnored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{".gitignore": "build/\n", "a.txt": "a\n"})
	writeFile(t, repo, "build/out.bin", "built\n")
	snap, err := TakeSnapshot(ctx, repo)
	require.NoError(t, err)
	tr, err := snap.NewTracker(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	head := gitT(t, repo, "rev-parse", "HEAD")

	writeFile(t, repo, ".gitignore", "*.tmp\n")
	writeFile(t, repo, "a.txt", "changed\n")
	look, err := tr.Look(ctx, head, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{".gitignore", "a.txt"}, look.Changed)
	sha, err := CommitJudged(ctx, repo, "checkpoint", nil, tr.Judged(ctx, nil))
	require.NoError(t, err)
	assert.Equal(t, ".gitignore\na.txt", gitT(t, repo, "show", "--name-only", "--format=", sha))
	assert.Equal(t, "?? build/", gitT(t, repo, "status", "--porcelain"), "left untracked")
}
