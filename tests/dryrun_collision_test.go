package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A dry run beside a live run of the same checkout: an overlapping scope is
// file_collision (exit 5) as the run would stop with, a disjoint one or
// --force-parallel starts; none of them creates a run or a claim.
func TestDryRunCollisionWithALiveRun(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	first, firstID := liveRun(t, repo, "--allow", "src/**")
	store := filepath.Join(repo, ".git", "runr")
	entries := func(dir string) int {
		es, err := os.ReadDir(filepath.Join(store, dir))
		require.NoError(t, err)
		return len(es)
	}
	runs, claims := entries("runs"), entries("active")

	dry := func(args ...string) (int, string) {
		argv := append([]string{"run", "--dry-run", "--prompt", "work"}, args...)
		return runrSync(t, repo, testEnv(repo), append(argv, "--", "fakeagent", "--do", "status done")...)
	}
	code, out := dry("--allow", "src/api/**")
	assert.Equal(t, 5, code, out)
	assert.Regexp(t, `(?m)^  FAIL +collisions +run `+firstID+` is live on this checkout with an overlapping scope$`, out)
	assert.Contains(t, out, "would stop before its first tick: file_collision (exit 5)")

	code, out = dry("--allow", "docs/**")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "no live run on this checkout claims an overlapping scope")

	code, out = dry("--force-parallel")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "not checked: --force-parallel")

	assert.Equal(t, runs, entries("runs"), "a dry run creates no run")
	assert.Equal(t, claims, entries("active"), "a dry run writes no claim")
	stopLive(t, first, repo, firstID)
}
