package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParallelKeys(t *testing.T) {
	def, err := Load(LoadOptions{RepoRoot: repo(t, "")})
	require.NoError(t, err)
	assert.Equal(t, Parallel{Workers: 1, MaxRequeues: 2}, def.Parallel)

	cfg, err := Load(LoadOptions{RepoRoot: repo(t, "parallel:\n  workers: 3\n  max_requeues: 0\n"),
		Overrides: []Override{{Key: "parallel.workers", Value: 4, Source: "--parallel"}}})
	require.NoError(t, err)
	assert.Equal(t, Parallel{Workers: 4, MaxRequeues: 0}, cfg.Parallel)
	// Working in parallel changes the run: a resume compares it.
	assert.NotEqual(t, def.Hash(), cfg.Hash())

	for _, tc := range []struct {
		file      string
		overrides []Override
		want      string
	}{
		{file: "parallel:\n  workers: 0\n", want: "runr.yaml: parallel.workers: 0 is below 1 (1 works the milestones one at a time)"},
		{overrides: []Override{{Key: "parallel.workers", Value: "x", Source: "--parallel"}}, want: "--parallel x: not a whole number"},
		{file: "parallel:\n  max_requeues: -1\n", want: "runr.yaml: parallel.max_requeues: -1 is negative"},
	} {
		_, err := Load(LoadOptions{RepoRoot: repo(t, tc.file), Overrides: tc.overrides})
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}
