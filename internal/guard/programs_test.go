package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRepositoryProgramsNeverRun: whatever program a repository names (a
// hook, core.hooksPath, core.fsmonitor, a filter or diff driver in its own
// config, a driver whose name holds "="), runr's git calls, from reading the
// status to a checkpoint commit, never start it.
func TestRepositoryProgramsNeverRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a.txt": "a\n"})
	aside := t.TempDir()
	marker := filepath.Join(aside, "ran")
	prog := filepath.Join(aside, "prog.sh")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho \"$0 $* ppid: $(tr \"\\\\0\" \" \" < /proc/$PPID/cmdline)\" >> "+marker+"\ncat\n"), 0o755))

	hooks := filepath.Join(dir, ".git", "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	for _, h := range []string{"post-index-change", "pre-commit", "commit-msg", "post-commit", "pre-auto-gc", "reference-transaction"} {
		require.NoError(t, os.Symlink(prog, filepath.Join(hooks, h)))
	}
	gitT(t, dir, "config", "core.fsmonitor", prog)
	gitT(t, dir, "config", "filter.evil.clean", prog)
	gitT(t, dir, "config", "filter.evil.smudge", prog)
	gitT(t, dir, "config", "filter.evil.required", "true")
	gitT(t, dir, "config", "filter.a=b.clean", prog)
	gitT(t, dir, "config", "diff.evil.textconv", prog)
	gitT(t, dir, "config", "diff.evil.command", prog)
	gitT(t, dir, "config", "diff.external", prog)
	writeFile(t, dir, ".gitattributes", "*.txt filter=evil diff=evil\n*.md filter=a=b\n")
	writeFile(t, dir, "a.txt", "changed\n")
	writeFile(t, dir, "b.md", "new\n")

	check := func(step string) {
		t.Helper()
		ran, _ := os.ReadFile(marker)
		require.Empty(t, string(ran), "a repository program ran in %s", step)
	}
	_, err := Changes(ctx, dir)
	require.NoError(t, err)
	check("status")
	_, err = TreeHash(ctx, dir)
	require.NoError(t, err)
	check("tree hash")
	_, err = TakeBaseline(ctx, dir)
	require.NoError(t, err)
	check("baseline")
	sha, err := CommitAll(ctx, dir, "checkpoint", nil)
	require.NoError(t, err)
	require.NotEmpty(t, sha)
	check("commit")
	// The filter did not run: the commit holds the file's bytes.
	assert.Equal(t, "changed", gitT(t, dir, "show", "HEAD:a.txt"))

	// A hooks directory of the repository's choosing is not used either.
	other := t.TempDir()
	require.NoError(t, os.Symlink(prog, filepath.Join(other, "post-index-change")))
	require.NoError(t, os.Symlink(prog, filepath.Join(other, "pre-commit")))
	gitT(t, dir, "config", "core.hooksPath", other)
	writeFile(t, dir, "a.txt", "again\n")
	_, err = TreeHash(ctx, dir)
	require.NoError(t, err)
	_, err = CommitAll(ctx, dir, "checkpoint 2", nil)
	require.NoError(t, err)

	_, err = os.Stat(marker)
	ran, _ := os.ReadFile(marker)
	assert.ErrorIs(t, err, os.ErrNotExist, "a repository program ran: %s", ran)
}
