package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Entries git reports in unusual ways: a submodule with new commits and
// untracked content, a file that became a symlink, an ignored directory,
// names with a tab, a backslash or a leading dash, and an untracked nested
// repository. Each is one change, named as git names it, and the baseline
// and tree hash handle all of them.
func TestChangesUnusualEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lib := newRepo(t, true)
	commitFiles(t, lib, map[string]string{"lib.go": "package lib\n"})

	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{".gitignore": "build/\n", "kind.txt": "a file\n", "target.txt": "t\n"})
	gitT(t, dir, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib, "deps/lib")
	gitT(t, dir, "commit", "--quiet", "-m", "add submodule")
	sub := filepath.Join(dir, "deps", "lib")
	writeFile(t, sub, "lib.go", "package lib // changed\n")
	gitT(t, sub, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "--quiet", "-am", "move the submodule")
	writeFile(t, sub, "scratch.txt", "untracked in the submodule\n")

	require.NoError(t, os.Remove(filepath.Join(dir, "kind.txt")))
	require.NoError(t, os.Symlink("target.txt", filepath.Join(dir, "kind.txt")))
	writeFile(t, dir, "build/out/app", "ignored\n")
	writeFile(t, dir, "tab\there.txt", "x")
	writeFile(t, dir, `back\slash.txt`, "x")
	writeFile(t, dir, "-rf", "x")
	writeFile(t, dir, "--all/x.txt", "x")
	nested := filepath.Join(dir, "vendor", "nested")
	require.NoError(t, os.MkdirAll(nested, 0o755))
	gitT(t, nested, "init", "--quiet")

	changes, err := Changes(ctx, dir)
	require.NoError(t, err)
	assert.ElementsMatch(t, []Change{
		{Path: "deps/lib", Kind: KindModified},
		{Path: "kind.txt", Kind: KindModified},
		{Path: "tab\there.txt", Kind: KindUntracked},
		{Path: `back\slash.txt`, Kind: KindUntracked},
		{Path: "-rf", Kind: KindUntracked},
		{Path: "--all/x.txt", Kind: KindUntracked},
		{Path: "vendor/nested/", Kind: KindUntracked},
	}, changes)

	base, err := TakeBaseline(ctx, dir)
	require.NoError(t, err)
	changed, err := ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Empty(t, changed)
	writeFile(t, dir, "-rf", "edited")
	writeFile(t, dir, `back\slash.txt`, "edited")
	writeFile(t, dir, "tab\there.txt", "edited")
	changed, err = ChangedSince(ctx, dir, base)
	require.NoError(t, err)
	assert.Equal(t, []string{"-rf", `back\slash.txt`, "tab\there.txt"}, changed)

	h0, err := TreeHash(ctx, dir)
	require.NoError(t, err)
	writeFile(t, dir, "--all/x.txt", "edited")
	h1, err := TreeHash(ctx, dir)
	require.NoError(t, err)
	assert.NotEqual(t, h0, h1)

	sha, err := CommitAll(ctx, dir, "checkpoint", []string{"-rf"})
	require.NoError(t, err)
	require.Len(t, sha, 40)
	changes, err = Changes(ctx, dir)
	require.NoError(t, err)
	assert.Contains(t, changes, Change{Path: "-rf", Kind: KindUntracked}, "an excluded name with a leading dash stays out")
}

// A repository whose HEAD is unborn: staged and untracked files are changes,
// and the tree hash and baseline work without a commit.
func TestChangesUnbornHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	writeFile(t, dir, "staged.txt", "s\n")
	gitT(t, dir, "add", "staged.txt")
	writeFile(t, dir, "staged.txt", "s, edited\n")
	writeFile(t, dir, "new.txt", "n\n")

	changes, err := Changes(ctx, dir)
	require.NoError(t, err)
	assert.ElementsMatch(t, []Change{{Path: "staged.txt", Kind: KindAdded}, {Path: "new.txt", Kind: KindUntracked}}, changes)
	head, err := Head(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, head)
	_, err = TreeHash(ctx, dir)
	require.NoError(t, err)
	committed, err := CommittedSince(ctx, dir, "")
	require.NoError(t, err)
	assert.Empty(t, committed)
}
