package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file git refuses to add (here a name it keeps out of every index, like
// "GIT~1"; an unreadable file is another) must not break the tree hash or a
// checkpoint: runr hashes and commits everything else, and the file stays in
// the working tree, untracked, for a person to see.
func TestTreeHashAndCommitWithFileGitCannotAdd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	gitT(t, repo, "config", "core.protectNTFS", "true")
	commitFiles(t, repo, map[string]string{"a.txt": "a\n"})
	h0, err := TreeHash(ctx, repo)
	require.NoError(t, err)

	writeFile(t, repo, "GIT~1", "git refuses this name\n")
	h1, err := TreeHash(ctx, repo)
	require.NoError(t, err, "a file git cannot add does not break the hash")
	assert.Equal(t, h0, h1, "the hash covers what git can hold")

	writeFile(t, repo, "b.txt", "b\n")
	h2, err := TreeHash(ctx, repo)
	require.NoError(t, err)
	assert.NotEqual(t, h1, h2, "other changes still count")

	sha, err := CommitAll(ctx, repo, "runr: milestone 1", nil)
	require.NoError(t, err, "the checkpoint commits the rest")
	require.Len(t, sha, 40)
	assert.Equal(t, "b.txt", gitT(t, repo, "show", "--name-only", "--format=", "HEAD"))
	changes, err := Changes(ctx, repo)
	require.NoError(t, err)
	assert.Equal(t, []Change{{Path: "GIT~1", Kind: KindUntracked}}, changes)
}

// An unreadable file (made by another user, or chmod 000) is judged by what
// can be seen of it: it does not break the baseline, the tree hash or a
// checkpoint, and a change of its size still shows.
func TestUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "a\n"})
	secret := filepath.Join(repo, "secret.pem")
	writeFile(t, repo, "secret.pem", "key\n")
	require.NoError(t, os.Chmod(secret, 0))
	t.Cleanup(func() { _ = os.Chmod(secret, 0o600) })

	base, err := TakeBaseline(ctx, repo)
	require.NoError(t, err, "the baseline of a tree with an unreadable file")
	changed, err := ChangedSince(ctx, repo, base)
	require.NoError(t, err)
	assert.Empty(t, changed)

	h0, err := TreeHash(ctx, repo)
	require.NoError(t, err, "the tree hash of a tree with an unreadable file")

	require.NoError(t, os.Chmod(secret, 0o600))
	require.NoError(t, os.WriteFile(secret, []byte("a longer key\n"), 0o600))
	require.NoError(t, os.Chmod(secret, 0))
	changed, err = ChangedSince(ctx, repo, base)
	require.NoError(t, err)
	assert.Equal(t, []string{"secret.pem"}, changed, "a change of its size shows")

	writeFile(t, repo, "b.txt", "b\n")
	h1, err := TreeHash(ctx, repo)
	require.NoError(t, err)
	assert.NotEqual(t, h0, h1)
	sha, err := CommitAll(ctx, repo, "checkpoint", nil)
	require.NoError(t, err)
	require.Len(t, sha, 40)
	assert.Equal(t, "b.txt", gitT(t, repo, "show", "--name-only", "--format=", "HEAD"))
}
