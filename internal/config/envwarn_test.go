package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvWarnings(t *testing.T) {
	for _, tt := range []struct {
		name, env string
		want      string // "" for no warning
	}{
		{"a misspelt key names the nearest", "RUNR_BUDGET_TIMEE=30m", "RUNR_BUDGET_TIMEE is not a runr setting and is ignored; did you mean RUNR_BUDGET_TIME (budget.time)?"},
		{"a key without its section", "RUNR_MAX_TICKS=5", "did you mean RUNR_BUDGET_MAX_TICKS (budget.max_ticks)?"},
		{"a dot for the underscore is not a key either", "RUNR_VERIFY_COMMAND=go test", "did you mean RUNR_VERIFY_COMMANDS (verify.commands)?"},
		{"in a section but near no key", "RUNR_BUDGET_WHATEVER_ELSE=1", "the settings of budget are RUNR_BUDGET_TIME, RUNR_BUDGET_MAX_TICKS"},
		{"a key is no warning", "RUNR_BUDGET_TIME=30m", ""},
		{"runr's own variables", "RUNR_HOME=/tmp/x", ""},
		{"set for a run's processes", "RUNR_MILESTONE_GOAL=do it", ""},
		{"set for a notify command", "RUNR_STOP_REASON=timeout", ""},
		{"the test suite's", "RUNR_SOAK_TRIALS=10", ""},
		{"far from every key", "RUNR_ZZQX=1", ""},
		{"empty is unset", "RUNR_BUDGET_TIMEE=", ""},
		{"not runr's prefix", "BUDGET_TIMEE=1", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := EnvWarnings([]string{tt.env, "PATH=/usr/bin"})
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Contains(t, got[0], tt.want)
		})
	}
}

// Load reports the warnings with the config, and still ignores the
// variable.
func TestLoadWarnsOfMisspeltVariables(t *testing.T) {
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, ""), Environ: []string{"RUNR_BUDGET_TIMEE=1m", "RUNR_BUDGET_TIMEE=2m"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"RUNR_BUDGET_TIMEE is not a runr setting and is ignored; did you mean RUNR_BUDGET_TIME (budget.time)?"}, cfg.Warnings)
	assert.Equal(t, "30m0s", cfg.Budget.Time.String())

	cfg, err = Load(LoadOptions{RepoRoot: repo(t, ""), Environ: []string{"RUNR_BUDGET_TIME=1m"}})
	require.NoError(t, err)
	assert.Empty(t, cfg.Warnings)
}
