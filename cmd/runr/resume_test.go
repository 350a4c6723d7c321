package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/resume"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestNewCmdResumeParsesFlags(t *testing.T) {
	var got *ResumeOptions
	cmd := NewCmdResume(testFactory(), func(o *ResumeOptions) error { got = o; return nil })
	require.NoError(t, execute(t, cmd, "latest", "--time", "30m", "--max-ticks", "9", "--max-iterations", "4", "--max-cost", "1.5",
		"--allow-deps", "--force-parallel", "--force", "--auto-resume", "--plan", "--json", "--quiet"))
	require.NotNil(t, got)
	assert.Equal(t, "latest", got.Ref)
	assert.Equal(t, []string{"30m", "9", "4", "1.5"}, []string{got.Time, got.MaxTicks, got.MaxIterations, got.MaxCost},
		"budget flags are kept as typed, so a bad value is config_invalid when the resume runs")
	for name, v := range map[string]bool{"allow-deps": got.AllowDeps, "force-parallel": got.ForceParallel, "force": got.Force,
		"auto-resume": got.AutoResume, "plan": got.Plan, "json": got.JSON, "quiet": got.Quiet} {
		assert.True(t, v, name)
	}

	err := execute(t, NewCmdResume(testFactory(), func(*ResumeOptions) error { return nil }))
	assert.ErrorContains(t, err, "accepts 1 arg")
}

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		opts    ResumeOptions
		want    resume.Grant
		wantErr string // a config_invalid containing this
	}{
		{opts: ResumeOptions{}, want: resume.Grant{}},
		{opts: ResumeOptions{Time: "90", MaxTicks: "10", MaxIterations: " 3 ", MaxCost: "2.5"},
			want: resume.Grant{Time: 90 * time.Minute, MaxTicks: 10, MaxIterations: 3, MaxCostUSD: 2.5}},
		{opts: ResumeOptions{Time: "banana"}, wantErr: "--time banana"},
		{opts: ResumeOptions{MaxTicks: "0"}, wantErr: "--max-ticks 0: not a whole number greater than 0"},
		{opts: ResumeOptions{MaxIterations: "x"}, wantErr: "--max-iterations x"},
		{opts: ResumeOptions{MaxCost: "-1"}, wantErr: "--max-cost -1: not an amount in USD greater than 0"},
		{opts: ResumeOptions{MaxCost: "Inf"}, wantErr: "--max-cost Inf"},
	} {
		g, err := parseGrant(&tc.opts)
		if tc.wantErr != "" {
			require.Error(t, err, "%+v", tc.opts)
			assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err), "%+v", tc.opts)
			assert.Contains(t, err.Error(), tc.wantErr)
			continue
		}
		require.NoError(t, err, "%+v", tc.opts)
		assert.Equal(t, tc.want, g)
	}
}
