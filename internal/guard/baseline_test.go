package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBaselineJudgesOnlyLaterChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"user.txt": "v1\n", "reverted.txt": "v1\n", "gone.txt": "x\n", "clean.txt": "c\n"})

	// The user's own uncommitted work before the run.
	writeFile(t, dir, "user.txt", "v2 by the user\n")
	writeFile(t, dir, "reverted.txt", "v2 by the user\n")
	writeFile(t, dir, "odd\nname .txt", "untracked by the user\n")
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.txt")))

	base, err := TakeBaseline(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, DeletedHash, base["gone.txt"])
	assert.Len(t, base["user.txt"], 40, "a git blob id")
	assert.ElementsMatch(t, []string{"user.txt", "reverted.txt", "odd\nname .txt", "gone.txt"}, keys(base),
		"exactly the paths dirty at the start")

	changed, err := ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Empty(t, changed, "nothing changed since the baseline")

	// The agent's work.
	writeFile(t, dir, "new.txt", "by the agent\n")
	writeFile(t, dir, "clean.txt", "edited by the agent\n")
	changed, err = ChangedSince(ctx, filepath.Join(dir), base)
	require.NoError(t, err)
	assert.Equal(t, []string{"clean.txt", "new.txt"}, changed)

	// Further edits to files dirty at the start count, and so does undoing them.
	writeFile(t, dir, "user.txt", "v3 by the agent\n")
	writeFile(t, dir, "odd\nname .txt", "edited by the agent\n")
	gitT(t, dir, "checkout", "--", "reverted.txt")
	writeFile(t, dir, "gone.txt", "restored\n")
	changed, err = ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Equal(t, []string{"clean.txt", "gone.txt", "new.txt", "odd\nname .txt", "reverted.txt", "user.txt"}, changed)
}

func TestCommittedSince(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)

	none, err := CommittedSince(ctx, dir, "")
	require.NoError(t, err)
	assert.Empty(t, none, "no commits at all")

	commitFiles(t, dir, map[string]string{"a.txt": "a\n", "old.go": "package old\n"})
	first, err := CommittedSince(ctx, dir, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "old.go"}, first, "everything, from a repository that had no commits")

	start, err := Head(ctx, dir)
	require.NoError(t, err)
	base, err := TakeBaseline(ctx, dir)
	require.NoError(t, err)

	none, err = CommittedSince(ctx, dir, start)
	require.NoError(t, err)
	assert.Empty(t, none, "HEAD has not moved")

	// Work that is committed leaves the status: the baseline no longer sees it,
	// CommittedSince does.
	writeFile(t, dir, "api/handler.go", "package api\n")
	gitT(t, dir, "mv", "old.go", "new.go")
	gitT(t, dir, "add", "--all")
	gitT(t, dir, "commit", "--quiet", "-m", "agent")

	changed, err := ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Empty(t, changed)
	committed, err := CommittedSince(ctx, dir, start)
	require.NoError(t, err)
	assert.Equal(t, []string{"api/handler.go", "new.go", "old.go"}, committed)
}

func TestBaselineInRepoWithoutCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	writeFile(t, dir, "TASK.md", "task\n")

	base, err := TakeBaseline(ctx, dir)
	require.NoError(t, err)
	changed, err := ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Empty(t, changed)

	writeFile(t, dir, "main.go", "package main\n")
	changed, err = ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Equal(t, []string{"main.go"}, changed)
}

func TestBaselineSymlinkAndDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a": "a"})
	require.NoError(t, os.Symlink("a", filepath.Join(dir, "link")))

	base, err := TakeBaseline(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, "symlink:a", base["link"])

	require.NoError(t, os.Remove(filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(dir, "link")))
	changed, err := ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Equal(t, []string{"link"}, changed)
}

func TestQuotePath(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plain.txt":     `"plain.txt"`,
		"with space":    `"with space"`,
		"new\nline":     `"new\012line"`,
		`"quoted"`:      `"\"quoted\""`,
		`back\slash`:    `"back\\slash"`,
		"bytes\xff\xfe": "\"bytes\xff\xfe\"",
	}
	for in, want := range tests {
		assert.Equal(t, want, quotePath(in), "quotePath(%q)", in)
	}
}

func keys(b Baseline) []string {
	var out []string
	for k := range b {
		out = append(out, k)
	}
	return out
}

func TestCommittedChangesLeavesOutUntouchedStartWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"notes.txt": "v1\n", "edited.txt": "v1\n", "gone.txt": "g\n"})
	start, err := Head(ctx, dir)
	require.NoError(t, err)

	// The user's own uncommitted work, allowed with --allow-dirty.
	writeFile(t, dir, "notes.txt", "v2 by the user\n")
	writeFile(t, dir, "edited.txt", "v2 by the user\n")
	writeFile(t, dir, "TASK.md", "- [ ] task\n")
	writeFile(t, dir, "odd\nname*.txt", "by the user\n")
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.txt")))
	base, err := TakeBaseline(ctx, dir)
	require.NoError(t, err)

	// The agent edits one of them and commits everything, the user's work too.
	writeFile(t, dir, "edited.txt", "v3 by the agent\n")
	writeFile(t, dir, "src/new.go", "package src\n")
	gitT(t, dir, "add", "--all")
	gitT(t, dir, "commit", "--quiet", "-m", "agent")

	all, err := CommittedSince(ctx, dir, start)
	require.NoError(t, err)
	assert.Equal(t, []string{"TASK.md", "edited.txt", "gone.txt", "notes.txt", "odd\nname*.txt", "src/new.go"}, all)
	changed, err := CommittedChanges(ctx, dir, start, base)
	require.NoError(t, err)
	assert.Equal(t, []string{"edited.txt", "src/new.go"}, changed,
		"only what differs from the start: the user's untouched files, a deletion included, are not the agent's")

	none, err := CommittedChanges(ctx, dir, gitT(t, dir, "rev-parse", "HEAD"), base)
	require.NoError(t, err)
	assert.Empty(t, none, "nothing committed since the given commit")
}
