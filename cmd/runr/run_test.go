package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// execute runs cmd with args as the root command would, with test streams.
func execute(t *testing.T, cmd *cobra.Command, args ...string) error {
	t.Helper()
	io, _, _ := testStreams()
	cmd.SetArgs(args)
	cmd.SetOut(io.Out)
	cmd.SetErr(io.Err)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return cmd.Execute()
}

func testFactory() *Factory {
	io, _, _ := testStreams()
	return NewFactory(io)
}

func TestNewCmdRunParsesFlags(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		overrides []config.Override
		argv      []string
		check     func(t *testing.T, o *RunOptions)
	}{
		{name: "nothing given", args: nil, overrides: nil},
		{name: "config flags become overrides, lists repeat",
			args: []string{"--time", "5m", "--verify", "go vet ./...", "--verify", "go test ./...", "--max-cost", "2"},
			overrides: []config.Override{
				{Key: "verify.commands", Value: []string{"go vet ./...", "go test ./..."}, Source: "--verify"},
				{Key: "budget.time", Value: "5m", Source: "--time"},
				{Key: "budget.max_cost_usd", Value: "2", Source: "--max-cost"},
			}},
		{name: "an argv after -- is a command agent, --task a setting",
			args: []string{"--task", "TASK.md", "--", "./agent.sh", "--fast"},
			argv: []string{"./agent.sh", "--fast"},
			overrides: []config.Override{
				{Key: "agent.kind", Value: "command", Source: "-- ARGV"},
				{Key: "agent.command", Value: []string{"./agent.sh", "--fast"}, Source: "-- ARGV"},
				{Key: "task", Value: "TASK.md", Source: "--task"},
			},
			check: func(t *testing.T, o *RunOptions) { assert.Equal(t, "TASK.md", o.Task) }},
		{name: "switches", args: []string{"--prompt", "do it", "--allow-deps", "--allow-dirty", "--force-parallel", "--worktree", "--json", "--quiet", "--auto-resume"},
			check: func(t *testing.T, o *RunOptions) {
				assert.Equal(t, "do it", o.Prompt)
				assert.Equal(t, state.Flags{AllowDeps: true, AllowDirty: true, ForceParallel: true, Worktree: true}, o.Flags)
				assert.True(t, o.JSON)
				assert.True(t, o.Quiet)
				assert.True(t, o.AutoResume)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *RunOptions
			require.NoError(t, execute(t, NewCmdRun(testFactory(), func(o *RunOptions) error { got = o; return nil }), tc.args...))
			require.NotNil(t, got)
			assert.ElementsMatch(t, tc.overrides, got.Overrides)
			assert.Equal(t, tc.argv, got.AgentArgv)
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestNewCmdRunRefusesArgumentsOutsideTheArgv(t *testing.T) {
	for _, args := range [][]string{{"./agent.sh"}, {"stray", "--", "./agent.sh"}} {
		called := false
		err := execute(t, NewCmdRun(testFactory(), func(*RunOptions) error { called = true; return nil }), args...)
		assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err), "%v", args)
		assert.Contains(t, err.Error(), "after --", "%v", args)
		assert.False(t, called, "%v: nothing runs after a usage error", args)
	}
}

// The help names the kind of value a budget flag takes, while the value
// is still checked by config (run) or parseGrant (resume), so that a bad
// one is config_invalid named with its flag.
func TestBudgetFlagsShowTheirType(t *testing.T) {
	for _, cmd := range []*cobra.Command{NewCmdRun(testFactory(), nil), NewCmdResume(testFactory(), nil)} {
		usage := cmd.Flags().FlagUsages()
		assert.Regexp(t, `--time duration +`, usage, cmd.Name())
		assert.Regexp(t, `--max-ticks int +`, usage, cmd.Name())
		assert.Regexp(t, `--max-iterations int +`, usage, cmd.Name())
		assert.Regexp(t, `--max-cost float +`, usage, cmd.Name())
	}

	var got *RunOptions
	require.NoError(t, execute(t, NewCmdRun(testFactory(), func(o *RunOptions) error { got = o; return nil }), "--max-ticks", "x", "--time", "5"))
	assert.ElementsMatch(t, []config.Override{
		{Key: "budget.max_ticks", Value: "x", Source: "--max-ticks"},
		{Key: "budget.time", Value: "5", Source: "--time"},
	}, got.Overrides, "the text goes to config as typed")

	_, err := parseGrant(&ResumeOptions{MaxTicks: "x"})
	assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
	assert.ErrorContains(t, err, "--max-ticks x")
}
