package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Exporter reads commits through a git dir of its own: the
// repository's config, which an agent can write, shapes nothing it writes;
// the tip of a run's commits is the one the others descend from, and
// commits on two lines are an error.
func TestExporter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git := func(args ...string) string {
		out, err := git(ctx, dir, args...)
		require.NoError(t, err, "git %v", args)
		return strings.TrimSpace(string(out))
	}
	ident := []string{"-c", "user.name=T", "-c", "user.email=t@example.com"}
	git("init", "-q", "-b", "main")
	commit := func(file, text string) string {
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644))
		git("add", "-A")
		git(append(ident, "commit", "-q", "-m", "add "+file)...)
		return git("rev-parse", "HEAD")
	}
	base := commit("a.txt", "a\n")
	one := commit("b.txt", "b\n")
	two := commit("c.txt", "c\n")
	git("config", "format.headers", "X-Planted: 1")
	git("config", "diff.noprefix", "true")
	git("config", "format.signature", "planted")

	e, err := NewExporter(ctx, dir)
	require.NoError(t, err)
	defer e.Close()
	tip, err := e.Tip(ctx, []string{base, two, one, two})
	require.NoError(t, err)
	assert.Equal(t, two, tip)
	commits, err := e.Commits(ctx, base, tip)
	require.NoError(t, err)
	assert.Equal(t, []string{one, two}, commits)
	patch, err := e.Patch(ctx, base, tip)
	require.NoError(t, err)
	assert.NotContains(t, string(patch), "X-Planted")
	assert.NotContains(t, string(patch), "planted")
	assert.Contains(t, string(patch), "diff --git a/b.txt b/b.txt")

	git("checkout", "-q", "-b", "side", base)
	side := commit("d.txt", "d\n")
	_, err = e.Tip(ctx, []string{base, two, side})
	assert.ErrorContains(t, err, "not on one line")
	_, err = e.Tip(ctx, []string{base, strings.Repeat("f", len(base))})
	assert.ErrorContains(t, err, "not in the repository")
}
