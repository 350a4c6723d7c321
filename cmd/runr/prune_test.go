package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30d":   30 * 24 * time.Hour,
		"7d":    7 * 24 * time.Hour,
		"36h":   36 * time.Hour,
		"1d12h": 36 * time.Hour,
		"90m":   90 * time.Minute,
		"0":     0,
		"0d":    0,
		" 2d ":  48 * time.Hour,
	} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "d", "banana", "-1h", "1d-1h", "1.5d", "30 d", "1w", "99999999999d"} {
		_, err := parseAge(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestNewCmdPruneParsesFlags(t *testing.T) {
	var got *PruneOptions
	run := func(o *PruneOptions) error { got = o; return nil }
	require.NoError(t, execute(t, NewCmdPrune(testFactory(), run)))
	assert.Equal(t, 30*24*time.Hour, got.OlderThan, "30d by default")
	assert.Zero(t, got.Keep)
	assert.False(t, got.Branches || got.DryRun || got.JSON)

	require.NoError(t, execute(t, NewCmdPrune(testFactory(), run), "--older-than", "1d12h", "--keep", "3", "--branches", "--dry-run", "--json"))
	assert.Equal(t, 36*time.Hour, got.OlderThan)
	assert.Equal(t, 3, got.Keep)
	assert.True(t, got.Branches && got.DryRun && got.JSON)
}

// A bad --older-than or --keep is a usage error (64) that names the flag.
func TestPruneBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"prune", "--older-than", "banana"},
		{"prune", "--older-than", "-3d"},
		{"prune", "--keep", "x"},
		{"prune", "--keep", "-1"},
		{"prune", "extra"},
	} {
		io, out, errb := testStreams()
		code := Main(args, io)
		assert.Equal(t, 64, code, "%v: %s", args, errb)
		assert.Empty(t, out.String())
		if len(args) > 2 {
			assert.Contains(t, errb.String(), args[1], "%v names its flag", args)
		}
	}
}
