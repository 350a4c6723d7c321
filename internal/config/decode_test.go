package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// Every key set away from its default lands in its own field: a key that
// mapstructure matched to the wrong field, or to none, shows here.
func TestEveryKeyReachesItsField(t *testing.T) {
	const file = `agent:
  kind: codex
  command: [./a.sh]
  args: [--fast]
  model: m1
  permission_mode: plan
  timeout: 21m
  idle_timeout: 6m
  log_cap: 3MiB
  kill_grace: 7s
  completion_promise: DONE
  continue_session: true
  price: {input_per_mtok: 3, output_per_mtok: 15.5}
  fallback: [{kind: gemini, model: m2, args: [--x]}, {kind: command, command: [./b.sh, "{prompt}"]}]
  result_grace: 3s
task: TASK.md
verify: {commands: [make test], timeout: 11m, require_tests: "on", coverage: {profiles: [cover.out], min_changed: 0.8}}
review: {command: [./review.sh]}
scope: {allow: ["src/**"], deny: ["vendor/**"], protect: ["**/*_test.go"], lockfiles: [go.sum]}
checkpoint: {commit: true}
budget: {time: 45, max_ticks: 9, max_iterations: 8, max_cost_usd: 2.5, max_tokens: 5000000000}
stop:
  max_milestone_retries: 4
  on_milestone_failure: skip
  max_consecutive_fails: 5
  max_retry_rate: 0.6
  max_reject_rate: 0.4
  min_attempts_for_rates: 6
  circuit_breaker: 70
  same_error: 8
  noop: 9
  no_progress: 10
  max_edge: 11
  max_review_rounds: 12
  success: [{type: all_tests_pass}]
  failure: [{type: never}]
  conditions: [{type: max_iterations, count: 2}]
resume: {max_auto_resumes: 1, backoff: [1s], max_wait: 1h}
sandbox: {mode: auto, writable: [~/.cache/go-build]}
`
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, file), AgentKinds: agents.Kinds()})
	require.NoError(t, err)

	assert.Equal(t, Agent{
		Kind: "codex", Command: []string{"./a.sh"}, Args: []string{"--fast"}, Model: "m1", PermissionMode: "plan",
		Timeout: 21 * time.Minute, IdleTimeout: 6 * time.Minute, LogCap: 3 << 20, KillGrace: 7 * time.Second,
		CompletionPromise: "DONE", ContinueSession: true, Price: Price{InputPerMTok: 3, OutputPerMTok: 15.5},
		Fallback:    []FallbackAgent{{Kind: "gemini", Model: "m2", Args: []string{"--x"}}, {Kind: "command", Command: []string{"./b.sh", "{prompt}"}}},
		ResultGrace: 3 * time.Second,
	}, cfg.Agent)
	assert.Equal(t, "TASK.md", cfg.Task)
	assert.Equal(t, Verify{Commands: []string{"make test"}, Timeout: 11 * time.Minute, RequireTests: RequireTestsOn,
		Coverage: Coverage{Profiles: []string{"cover.out"}, MinChanged: 0.8}}, cfg.Verify)
	assert.Equal(t, Review{Command: []string{"./review.sh"}}, cfg.Review)
	assert.Equal(t, Scope{Allow: []string{"src/**"}, Deny: []string{"vendor/**"}, Protect: []string{"**/*_test.go"}, Lockfiles: []string{"go.sum"}}, cfg.Scope)
	assert.Equal(t, Checkpoint{Commit: true}, cfg.Checkpoint)
	assert.Equal(t, Budget{Time: 45 * time.Minute, MaxTicks: 9, MaxIterations: 8, MaxCostUSD: 2.5, MaxTokens: 5_000_000_000}, cfg.Budget)
	assert.Equal(t, Resume{MaxAutoResumes: 1, Backoff: []time.Duration{time.Second}, MaxWait: time.Hour}, cfg.Resume)
	assert.Equal(t, Sandbox{Mode: "auto", Writable: []string{"~/.cache/go-build"}}, cfg.Sandbox)

	stop := cfg.Stop
	assert.Equal(t, []any{4, "skip", 5, 0.6, 0.4, 6, 70, 8, 9, 10, 11, 12}, []any{
		stop.MaxMilestoneRetries, stop.OnMilestoneFailure, stop.MaxConsecutiveFails, stop.MaxRetryRate,
		stop.MaxRejectRate, stop.MinAttemptsForRates, stop.CircuitBreaker, stop.SameError, stop.Noop,
		stop.NoProgress, stop.MaxEdge, stop.MaxReviewRounds,
	})
	require.Len(t, stop.Success, 1)
	assert.Equal(t, stopconditions.TypeAllTestsPass, stop.Success[0].Type())
	require.Len(t, stop.Failure, 1)
	assert.Equal(t, stopconditions.TypeNever, stop.Failure[0].Type())
	require.Len(t, stop.Conditions, 1)
	assert.Equal(t, stopconditions.TypeMaxIterations, stop.Conditions[0].Type())

	// Raw holds the same settings in runr.yaml's shape: budget.time in
	// minutes written as a duration.
	assert.Equal(t, "45m", cfg.Raw["budget"].(map[string]any)["time"])
	assert.Equal(t, int64(5_000_000_000), cfg.Raw["budget"].(map[string]any)["max_tokens"])
	assert.Equal(t, "codex", cfg.Raw["agent"].(map[string]any)["kind"])
}

func TestAgentKindsComeFromTheCaller(t *testing.T) {
	const file = "agent:\n  kind: cluade\n"
	// Without the list any kind loads; the adapter lookup refuses it later.
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, file)})
	require.NoError(t, err)
	assert.Equal(t, "cluade", cfg.Agent.Kind)

	msg := loadErr(t, LoadOptions{RepoRoot: repo(t, file), AgentKinds: []string{"b", "claude", "a"}})
	assert.Equal(t, "runr.yaml: agent.kind: cluade is not one of b, claude, a (did you mean claude?)", msg)

	cfg, err = Load(LoadOptions{RepoRoot: repo(t, "agent:\n  kind: gemini\n"), AgentKinds: agents.Kinds()})
	require.NoError(t, err)
	assert.Equal(t, "gemini", cfg.Agent.Kind)
}

// Of several bad values the first in the order of Keys() is reported,
// whichever layer set it.
func TestFirstErrorInKeyOrder(t *testing.T) {
	msg := loadErr(t, LoadOptions{
		RepoRoot: repo(t, "stop:\n  noop: -1\nagent:\n  timeout: banana\n"),
		Environ:  []string{"RUNR_VERIFY_COMMANDS=go test ./...", "RUNR_BUDGET_TIME=soon"},
	})
	assert.Equal(t, "runr.yaml: agent.timeout: banana is not a duration (use a number with a unit: 90s, 5m, 1h30m)", msg)

	msg = loadErr(t, LoadOptions{
		RepoRoot: repo(t, "stop:\n  noop: -1\n"),
		Environ:  []string{"RUNR_BUDGET_TIME=soon", "RUNR_VERIFY_COMMANDS=go test ./..."},
	})
	assert.Equal(t, `RUNR_VERIFY_COMMANDS: go test ./... is not a JSON array (write e.g. ["go test ./..."])`, msg)
}

// agent.log_cap is a size: KiB, MiB, GiB or bytes, at least 1KiB; a bad
// one is config_invalid naming the key.
func TestLogCapSize(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int64
		err   string
	}{
		{"64MiB", 64 << 20, ""}, {"512KiB", 512 << 10, ""}, {"1GiB", 1 << 30, ""}, {"4096", 4096, ""}, {"2 MiB", 2 << 20, ""},
		{"1KiB", 1 << 10, ""}, {"100", 0, "below 1KiB"}, {"64MB", 0, "not a size"}, {"-1KiB", 0, "not a size"}, {"lots", 0, "not a size"},
		{"9999999999GiB", 0, "too large"},
	} {
		cfg, err := Load(LoadOptions{RepoRoot: repo(t, "agent:\n  log_cap: "+tt.value+"\n"), AgentKinds: agents.Kinds()})
		if tt.err != "" {
			require.Error(t, err, tt.value)
			assert.Contains(t, err.Error(), "agent.log_cap", tt.value)
			assert.Contains(t, err.Error(), tt.err, tt.value)
			continue
		}
		require.NoError(t, err, tt.value)
		assert.Equal(t, tt.want, cfg.Agent.LogCap, tt.value)
		assert.Equal(t, FormatSize(tt.want), cfg.Raw["agent"].(map[string]any)["log_cap"], tt.value)
	}
}
