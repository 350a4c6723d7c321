package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTreeHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{".gitignore": "*.log\nbuild/\n", "a.txt": "a\n", "sub/b.txt": "b\n"})
	writeFile(t, dir, "dirty.txt", "uncommitted work\n")
	gitT(t, dir, "add", "dirty.txt")
	writeFile(t, dir, "dirty.txt", "uncommitted work, edited after staging\n")

	indexPath := filepath.Join(dir, ".git", "index")
	indexBefore, err := os.ReadFile(indexPath)
	require.NoError(t, err)

	h0, err := TreeHash(ctx, dir)
	require.NoError(t, err)
	require.Len(t, h0, 40)

	hash := func() string {
		t.Helper()
		h, err := TreeHash(ctx, dir)
		require.NoError(t, err)
		return h
	}

	assert.Equal(t, h0, hash(), "nothing changed")
	sub, err := TreeHash(ctx, filepath.Join(dir, "sub"))
	require.NoError(t, err)
	assert.Equal(t, h0, sub, "the same tree from a subdirectory")

	writeFile(t, dir, "debug.log", "ignored")
	writeFile(t, dir, "build/out.bin", "ignored")
	writeFile(t, dir, ".git/runr/runs/r1/state.json", "{}")
	assert.Equal(t, h0, hash(), "ignored files and the run store do not count")

	writeFile(t, dir, "a.txt", "a edited\n")
	h1 := hash()
	assert.NotEqual(t, h0, h1, "an edit changes the hash")
	writeFile(t, dir, "a.txt", "a\n")
	assert.Equal(t, h0, hash(), "the hash follows content, not history")

	writeFile(t, dir, "sub/new file.txt", "new\n")
	h2 := hash()
	assert.NotEqual(t, h0, h2, "a new untracked file changes the hash")
	require.NoError(t, os.Remove(filepath.Join(dir, "sub", "new file.txt")))
	require.NoError(t, os.Remove(filepath.Join(dir, "sub", "b.txt")))
	assert.NotEqual(t, h0, hash(), "a deletion changes the hash")
	writeFile(t, dir, "sub/b.txt", "b\n")
	assert.Equal(t, h0, hash())

	indexAfter, err := os.ReadFile(indexPath)
	require.NoError(t, err)
	assert.Equal(t, indexBefore, indexAfter, "the real index is left byte-identical")

	// Staging does not change what the tree holds.
	gitT(t, dir, "add", "--all")
	assert.Equal(t, h0, hash(), "staging changes the index, not the tree")
	// And the tree is what a commit of everything would record.
	gitT(t, dir, "commit", "--quiet", "-m", "all")
	assert.Equal(t, gitT(t, dir, "rev-parse", "HEAD^{tree}"), h0)
}

func TestTreeHashWithoutCommitsOrIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	empty, err := TreeHash(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, gitT(t, dir, "hash-object", "-t", "tree", "/dev/null"), empty, "the empty tree")
	_, err = os.Stat(filepath.Join(dir, ".git", "index"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no index is created")

	writeFile(t, dir, "first.txt", "1\n")
	h, err := TreeHash(ctx, dir)
	require.NoError(t, err)
	assert.NotEqual(t, empty, h)

	_, err = TreeHash(ctx, t.TempDir())
	assert.ErrorIs(t, err, ErrNotRepository)
}
