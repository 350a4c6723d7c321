package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// repo returns a temporary repository root holding runr.yaml with content;
// an empty content writes no file.
func repo(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if content != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte(content), 0o644))
	}
	return dir
}

// loadErr loads and returns the error, which must be config_invalid.
func loadErr(t *testing.T, opts LoadOptions) string {
	t.Helper()
	cfg, err := Load(opts)
	require.Error(t, err)
	require.Nil(t, cfg)
	assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err), "error: %v", err)
	return err.Error()
}

func TestDefaults(t *testing.T) {
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, "")})
	require.NoError(t, err)

	assert.Equal(t, "", cfg.File)
	assert.Equal(t, "command", cfg.Agent.Kind)
	assert.Equal(t, []string{}, cfg.Agent.Command)
	assert.Equal(t, []string{}, cfg.Agent.Args)
	assert.Equal(t, "", cfg.Agent.Model)
	assert.Equal(t, "bypassPermissions", cfg.Agent.PermissionMode)
	assert.Equal(t, 20*time.Minute, cfg.Agent.Timeout)
	assert.Equal(t, 5*time.Minute, cfg.Agent.IdleTimeout)
	assert.Equal(t, 5*time.Second, cfg.Agent.KillGrace)
	assert.Equal(t, "<promise>COMPLETE</promise>", cfg.Agent.CompletionPromise)
	assert.False(t, cfg.Agent.ContinueSession)
	assert.Equal(t, Price{}, cfg.Agent.Price)
	assert.Equal(t, "", cfg.Task)
	assert.Equal(t, []string{}, cfg.Verify.Commands)
	assert.Equal(t, 10*time.Minute, cfg.Verify.Timeout)
	assert.Equal(t, []string{}, cfg.Review.Command)
	assert.Equal(t, []string{}, cfg.Scope.Allow)
	assert.Equal(t, []string{}, cfg.Scope.Deny)
	assert.Equal(t, []string{"go.sum", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "Cargo.lock",
		"poetry.lock", "uv.lock", "Gemfile.lock", "composer.lock"}, cfg.Scope.Lockfiles)
	assert.False(t, cfg.Checkpoint.Commit)
	assert.Equal(t, Budget{Time: 30 * time.Minute, MaxTicks: 200}, cfg.Budget)
	assert.Equal(t, stopconditions.Limits{Time: 30 * time.Minute, MaxTicks: 200}, cfg.Limits())

	want := stopconditions.Rules{
		MaxMilestoneRetries: 3, OnMilestoneFailure: "stop", MaxConsecutiveFails: 3,
		MaxRetryRate: 0.5, MaxRejectRate: 0.3, MinAttemptsForRates: 4, CircuitBreaker: 50,
		SameError: 3, Noop: 3, NoProgress: 5, MaxEdge: 10, MaxReviewRounds: 2,
		Success: []stopconditions.Condition{}, Failure: []stopconditions.Condition{},
		Conditions: []stopconditions.Condition{},
	}
	assert.Equal(t, want, cfg.Stop)
	assert.Equal(t, Resume{MaxAutoResumes: 3, Backoff: []time.Duration{30 * time.Second, 2 * time.Minute, 5 * time.Minute},
		MaxWait: 6 * time.Hour}, cfg.Resume)

	// Raw is in the shape of runr.yaml, durations written as a person would.
	assert.Equal(t, "30m", cfg.Raw["budget"].(map[string]any)["time"])
	assert.Equal(t, []string{"30s", "2m", "5m"}, cfg.Raw["resume"].(map[string]any)["backoff"])
	assert.Equal(t, 0.0, cfg.Raw["agent"].(map[string]any)["price"].(map[string]any)["input_per_mtok"])
}

func TestLayersOverrideEachOther(t *testing.T) {
	const file = "budget:\n  time: 10m\nverify:\n  commands: [make test]\n"
	env := []string{"RUNR_BUDGET_TIME=20m"}
	flag := []Override{{Key: "budget.time", Value: "40m", Source: "--time"}}

	tests := []struct {
		name      string
		file      string
		env       []string
		overrides []Override
		want      time.Duration
	}{
		{"default", "", nil, nil, 30 * time.Minute},
		{"file over default", file, nil, nil, 10 * time.Minute},
		{"env over file", file, env, nil, 20 * time.Minute},
		{"env over default", "", env, nil, 20 * time.Minute},
		{"flag over env", file, env, flag, 40 * time.Minute},
		{"flag over file", file, nil, flag, 40 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(LoadOptions{RepoRoot: repo(t, tt.file), Environ: tt.env, Overrides: tt.overrides})
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.Budget.Time)
			if tt.file != "" {
				// A layer above replaces only the keys it sets.
				assert.Equal(t, []string{"make test"}, cfg.Verify.Commands)
			}
		})
	}
}

func TestExplicitConfigFile(t *testing.T) {
	root := repo(t, "budget:\n  max_ticks: 7\n")
	other := filepath.Join(t.TempDir(), "ci.yaml")
	require.NoError(t, os.WriteFile(other, []byte("budget:\n  max_ticks: 9\n"), 0o644))

	cfg, err := Load(LoadOptions{RepoRoot: root, ConfigFile: other})
	require.NoError(t, err)
	assert.Equal(t, 9, cfg.Budget.MaxTicks, "--config replaces runr.yaml")
	assert.Equal(t, other, cfg.File)

	cfg, err = Load(LoadOptions{RepoRoot: root})
	require.NoError(t, err)
	assert.Equal(t, 7, cfg.Budget.MaxTicks)
	assert.Equal(t, filepath.Join(root, FileName), cfg.File)

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	msg := loadErr(t, LoadOptions{RepoRoot: root, ConfigFile: missing})
	assert.Contains(t, msg, "--config "+missing)
	assert.Contains(t, msg, "no such file")
}

func TestEnvironment(t *testing.T) {
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, ""), Environ: []string{
		`RUNR_VERIFY_COMMANDS=["go test ./...", "go vet ./..."]`,
		`RUNR_SCOPE_LOCKFILES=[]`,
		`RUNR_RESUME_BACKOFF=["1s","1m"]`,
		`RUNR_STOP_SUCCESS=[{"type": "max_iterations", "count": 3}]`,
		"RUNR_STOP_MAX_RETRY_RATE=0.4",
		"RUNR_AGENT_IDLE_TIMEOUT=1s",
		"RUNR_AGENT_PRICE_INPUT_PER_MTOK=3",
		"RUNR_AGENT_CONTINUE_SESSION=true",
		"RUNR_BUDGET_MAX_TOKENS=5000000000",
		"RUNR_STOP_ON_MILESTONE_FAILURE=skip",
		// Not keys: runr sets these for its children, or they belong to others.
		"RUNR_RUN_ID=20261121T230017Z-3f9a1c",
		"RUNR_HOME=/tmp/elsewhere",
		"RUNR_MILESTONE_GOAL=do it",
		"RUNR_BUDGET=banana",
		// Empty counts as unset, as a CI template with a missing value gives.
		"RUNR_BUDGET_TIME=",
		"PATH=/usr/bin",
	}})
	require.NoError(t, err)
	assert.Equal(t, []string{"go test ./...", "go vet ./..."}, cfg.Verify.Commands)
	assert.Equal(t, []string{}, cfg.Scope.Lockfiles)
	assert.Equal(t, []time.Duration{time.Second, time.Minute}, cfg.Resume.Backoff)
	require.Len(t, cfg.Stop.Success, 1)
	assert.Equal(t, stopconditions.TypeMaxIterations, cfg.Stop.Success[0].Type())
	assert.Equal(t, 0.4, cfg.Stop.MaxRetryRate)
	assert.Equal(t, time.Second, cfg.Agent.IdleTimeout)
	assert.Equal(t, 3.0, cfg.Agent.Price.InputPerMTok)
	assert.True(t, cfg.Agent.ContinueSession)
	assert.Equal(t, int64(5_000_000_000), cfg.Budget.MaxTokens)
	assert.Equal(t, "skip", cfg.Stop.OnMilestoneFailure)
	assert.Equal(t, 30*time.Minute, cfg.Budget.Time)
	// The condition is kept as written for config.json.
	assert.Equal(t, []any{map[string]any{"type": "max_iterations", "count": 3}},
		cfg.Raw["stop"].(map[string]any)["success"])
}

func TestEnvNamesAreUniqueAndComplete(t *testing.T) {
	seen := map[string]string{}
	for _, k := range Keys() {
		name := EnvName(k)
		_, dup := seen[name]
		assert.False(t, dup, "%s and %s share %s", seen[name], k, name)
		seen[name] = k
		assert.Equal(t, k, envIndex[name])
	}
	assert.Equal(t, "RUNR_AGENT_PRICE_INPUT_PER_MTOK", EnvName("agent.price.input_per_mtok"))
	assert.Equal(t, "RUNR_STOP_MAX_RETRY_RATE", EnvName("stop.max_retry_rate"))
}

func TestUnknownKeysInFile(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"typo in a rule", "stop:\n  max_retry_rat: 0.2\n",
			"runr.yaml:2: unknown key stop.max_retry_rat (did you mean stop.max_retry_rate?)"},
		{"typo in a section", "budgte:\n  time: 5m\n",
			"runr.yaml:1: unknown key budgte (did you mean budget?)"},
		{"right key, wrong section", "max_ticks: 5\n",
			"runr.yaml:1: unknown key max_ticks (did you mean budget.max_ticks?)"},
		{"nested too deep", "agent:\n  price:\n    input: 3\n",
			"runr.yaml:3: unknown key agent.price.input (did you mean agent.price.input_per_mtok?)"},
		{"nothing close", "agent:\n  kind: claude\nfrobnicate: yes\n",
			"runr.yaml:3: unknown key frobnicate (see docs/configuration.md for the keys runr knows)"},
		{"dotted key", "budget.time: 5m\n",
			"runr.yaml:1: unknown key budget.time (write it nested, one level per part of budget.time)"},
		{"section given a value", "verify: go test ./...\n",
			"runr.yaml:1: verify must be a mapping of keys (commands, timeout, require_tests, coverage)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, loadErr(t, LoadOptions{RepoRoot: repo(t, tt.file)}))
		})
	}
}

func TestYAMLSyntaxErrorNamesFileAndLine(t *testing.T) {
	msg := loadErr(t, LoadOptions{RepoRoot: repo(t, "agent:\n  kind: claude\n budget: [\n")})
	assert.Regexp(t, `^runr\.yaml:\d+: .+; fix the YAML syntax$`, msg)

	msg = loadErr(t, LoadOptions{RepoRoot: repo(t, "stop:\n  noop: 1\n  noop: 2\n")})
	assert.Equal(t, "runr.yaml:3: stop.noop is set twice (first on line 2); keep one", msg)

	msg = loadErr(t, LoadOptions{RepoRoot: repo(t, "- a\n- b\n")})
	assert.Equal(t, "runr.yaml:1: the file must be a mapping of settings (agent:, task:, verify:, ...)", msg)
}

func TestEmptyFileAndNullsKeepDefaults(t *testing.T) {
	for _, content := range []string{"# nothing yet\n", "verify:\n", "budget:\n  time:\n"} {
		cfg, err := Load(LoadOptions{RepoRoot: repo(t, content)})
		require.NoError(t, err, content)
		assert.Equal(t, 30*time.Minute, cfg.Budget.Time, content)
		assert.Equal(t, 10*time.Minute, cfg.Verify.Timeout, content)
	}
}

func TestInvalidValues(t *testing.T) {
	const budgetHint = "not a duration (use 30m, 1h30m, or minutes as a number)"
	flag := func(key, source string, value any) []Override {
		return []Override{{Key: key, Value: value, Source: source}}
	}
	tests := []struct {
		name      string
		file      string
		env       []string
		overrides []Override
		want      string
	}{
		// The examples of the design contract, word for word.
		{name: "flag time", overrides: flag("budget.time", "--time", "banana"),
			want: "--time banana: " + budgetHint},
		{name: "flag ticks", overrides: flag("budget.max_ticks", "--max-ticks", "x"),
			want: "--max-ticks x: not a whole number"},
		{name: "file rate", file: "stop:\n  max_retry_rate: 1.5\n",
			want: "runr.yaml: stop.max_retry_rate: 1.5 is out of range (0 to 1)"},

		{name: "env rate", env: []string{"RUNR_STOP_MAX_REJECT_RATE=-0.1"},
			want: "RUNR_STOP_MAX_REJECT_RATE: -0.1 is out of range (0 to 1)"},
		{name: "env time", env: []string{"RUNR_BUDGET_TIME=soon"},
			want: "RUNR_BUDGET_TIME: soon is " + budgetHint},
		{name: "zero time", file: "budget:\n  time: 0\n",
			want: "runr.yaml: budget.time: 0 is not positive (give a time greater than 0, e.g. 30m)"},
		{name: "negative time flag", overrides: flag("budget.time", "--time", "-5m"),
			want: "--time -5m: not positive (give a time greater than 0, e.g. 30m)"},
		{name: "duration without unit", file: "agent:\n  timeout: 600\n",
			want: "runr.yaml: agent.timeout: 600 is missing a unit (write e.g. 600s or 600m)"},
		{name: "bad duration", env: []string{"RUNR_VERIFY_TIMEOUT=ten minutes"},
			want: "RUNR_VERIFY_TIMEOUT: ten minutes is not a duration (use a number with a unit: 90s, 5m, 1h30m)"},
		{name: "zero duration", file: "agent:\n  kill_grace: 0s\n",
			want: "runr.yaml: agent.kill_grace: 0s is not positive (give a duration greater than 0, e.g. 5m)"},
		{name: "negative count", file: "stop:\n  noop: -1\n",
			want: "runr.yaml: stop.noop: -1 is negative (use 0 or more; 0 turns the limit off)"},
		{name: "fractional count", file: "budget:\n  max_iterations: 2.5\n",
			want: "runr.yaml: budget.max_iterations: 2.5 is not a whole number"},
		{name: "count as text", env: []string{"RUNR_STOP_CIRCUIT_BREAKER=many"},
			want: "RUNR_STOP_CIRCUIT_BREAKER: many is not a whole number"},
		{name: "negative cost flag", overrides: flag("budget.max_cost_usd", "--max-cost", "-1"),
			want: "--max-cost -1: negative (use 0 or more)"},
		{name: "cost not a number", overrides: flag("budget.max_cost_usd", "--max-cost", "$5"),
			want: "--max-cost $5: not a number"},
		{name: "negative price", file: "agent:\n  price:\n    output_per_mtok: -15\n",
			want: "runr.yaml: agent.price.output_per_mtok: -15 is negative (use 0 or more)"},
		{name: "unknown kind", file: "agent:\n  kind: cluade\n",
			want: "runr.yaml: agent.kind: cluade is not one of claude, codex, gemini, opencode, aider, qwen, command (did you mean claude?)"},
		{name: "unknown kind flag", overrides: flag("agent.kind", "--agent", "cursor"),
			want: "--agent cursor: not one of claude, codex, gemini, opencode, aider, qwen, command"},
		{name: "failure mode", env: []string{"RUNR_STOP_ON_MILESTONE_FAILURE=continue"},
			want: "RUNR_STOP_ON_MILESTONE_FAILURE: continue is not one of stop, skip"},
		{name: "empty backoff", file: "resume:\n  backoff: []\n",
			want: "runr.yaml: resume.backoff: [] is empty (give at least one duration, e.g. [30s, 2m, 5m])"},
		{name: "bad backoff item", file: "resume:\n  backoff: [30s, later]\n",
			want: "runr.yaml: resume.backoff[1]: later is not a duration (use a number with a unit: 90s, 5m, 1h30m)"},
		{name: "backoff not a list", file: "resume:\n  backoff: 30s\n",
			want: "runr.yaml: resume.backoff: 30s is not a list of durations (write e.g. [30s, 2m, 5m])"},
		{name: "bad glob", file: "scope:\n  allow: [\"internal/**\", \"src/[a\"]\n",
			want: "runr.yaml: scope.allow[1]: src/[a is not a valid glob (e.g. internal/**, *.go, docs/*.md)"},
		{name: "bad glob flag", overrides: flag("scope.deny", "--deny", []string{"vendor/**", "{a"}),
			want: "--deny {a: not a valid glob (e.g. internal/**, *.go, docs/*.md)"},
		{name: "list written as text", file: "verify:\n  commands: go test ./...\n",
			want: `runr.yaml: verify.commands: go test ./... is not a list (write e.g. ["go test ./..."])`},
		{name: "env list not JSON", env: []string{"RUNR_VERIFY_COMMANDS=go test ./..."},
			want: `RUNR_VERIFY_COMMANDS: go test ./... is not a JSON array (write e.g. ["go test ./..."])`},
		{name: "env object not array", env: []string{`RUNR_STOP_FAILURE={"type": "never"}`},
			want: `RUNR_STOP_FAILURE: {"type": "never"} is not a JSON array (write e.g. [{"type": "all_tests_pass"}])`},
		{name: "bool", env: []string{"RUNR_CHECKPOINT_COMMIT=sometimes"},
			want: "RUNR_CHECKPOINT_COMMIT: sometimes is not true or false"},
		{name: "string given a list", file: "task: [a, b]\n",
			want: `runr.yaml: task: ["a","b"] is not a single value (write it as text)`},
		{name: "notify format", file: "notify:\n  format: teams\n",
			want: "runr.yaml: notify.format: teams is not one of json, slack, discord, ntfy"},
		{name: "notify on", env: []string{`RUNR_NOTIFY_ON=["stop", "sucess"]`},
			want: "RUNR_NOTIFY_ON: sucess is not one of stop, failure, success, milestone (did you mean success?)"},
		{name: "notify on item", file: "notify:\n  on: [success, bogus]\n",
			want: "runr.yaml: notify.on[1]: bogus is not one of stop, failure, success, milestone"},
		{name: "notify on twice", file: "notify:\n  on: [stop, stop]\n",
			want: "runr.yaml: notify.on[1]: stop is listed twice"},
		// A URL written where its variable's name belongs is refused without
		// being repeated: it may carry a token.
		{name: "webhook URL instead of its variable", file: "notify:\n  webhook_url_env: https://hooks.example/T0/secret\n",
			want: "runr.yaml: notify.webhook_url_env: (value not shown) is not the name of an environment variable (write the variable's name, e.g. RUNR_WEBHOOK_URL, and put the URL in that variable)"},
		{name: "notify timeout", file: "notify:\n  timeout: 10\n",
			want: "runr.yaml: notify.timeout: 10 is missing a unit (write e.g. 10s or 10m)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := loadErr(t, LoadOptions{RepoRoot: repo(t, tt.file), Environ: tt.env, Overrides: tt.overrides,
				AgentKinds: agents.Kinds()})
			assert.Equal(t, tt.want, msg)
		})
	}
}

func TestNotifyKeys(t *testing.T) {
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, "notify:\n  command: [./notify.sh, --quiet]\n  webhook_url_env: SLACK_URL\n  format: slack\n  on: [failure, milestone]\n  timeout: 3s\n"),
		Environ: []string{"SLACK_URL=https://hooks.example/T0/secret"}})
	require.NoError(t, err)
	assert.Equal(t, Notify{Command: []string{"./notify.sh", "--quiet"}, WebhookURLEnv: "SLACK_URL", Format: NotifySlack,
		On: []string{NotifyOnFailure, NotifyOnMilestone}, Timeout: 3 * time.Second}, cfg.Notify)
	// config.json is Raw: the variable's name, never the URL it holds.
	assert.Equal(t, "SLACK_URL", cfg.Raw["notify"].(map[string]any)["webhook_url_env"])
	raw, err := yaml.Marshal(cfg.Raw)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "hooks.example")

	def, err := Load(LoadOptions{RepoRoot: repo(t, "")})
	require.NoError(t, err)
	assert.Equal(t, Notify{Command: []string{}, Format: NotifyJSON, On: []string{NotifyOnStop}, Timeout: 10 * time.Second}, def.Notify)
	// Who is notified is not part of what a resume compares.
	assert.Equal(t, def.Hash(), cfg.Hash())
}

func TestFlagValues(t *testing.T) {
	tests := []struct {
		name     string
		override Override
		check    func(t *testing.T, c *Config)
	}{
		{"time in minutes", Override{"budget.time", "45", "--time"},
			func(t *testing.T, c *Config) { assert.Equal(t, 45*time.Minute, c.Budget.Time) }},
		{"time as duration", Override{"budget.time", "1h30m", "--time"},
			func(t *testing.T, c *Config) { assert.Equal(t, 90*time.Minute, c.Budget.Time) }},
		{"ticks as int", Override{"budget.max_ticks", 12, "--max-ticks"},
			func(t *testing.T, c *Config) { assert.Equal(t, 12, c.Budget.MaxTicks) }},
		{"ticks as text", Override{"budget.max_ticks", "12", "--max-ticks"},
			func(t *testing.T, c *Config) { assert.Equal(t, 12, c.Budget.MaxTicks) }},
		{"cost", Override{"budget.max_cost_usd", "2.50", "--max-cost"},
			func(t *testing.T, c *Config) { assert.Equal(t, 2.5, c.Budget.MaxCostUSD) }},
		{"repeated verify", Override{"verify.commands", []string{"go vet ./...", "go test ./..."}, "--verify"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, []string{"go vet ./...", "go test ./..."}, c.Verify.Commands)
			}},
		{"one verify as text", Override{"verify.commands", "go test ./...", "--verify"},
			func(t *testing.T, c *Config) { assert.Equal(t, []string{"go test ./..."}, c.Verify.Commands) }},
		{"argv after --", Override{"agent.command", []string{"./agent.sh", "{prompt_file}"}, "--"},
			func(t *testing.T, c *Config) {
				assert.Equal(t, []string{"./agent.sh", "{prompt_file}"}, c.Agent.Command)
			}},
		{"commit", Override{"checkpoint.commit", true, "--worktree"},
			func(t *testing.T, c *Config) { assert.True(t, c.Checkpoint.Commit) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(LoadOptions{RepoRoot: repo(t, ""), Overrides: []Override{tt.override}})
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

func TestOverrideOfUnknownKeyIsABug(t *testing.T) {
	_, err := Load(LoadOptions{Overrides: []Override{{Key: "budget.tim", Value: "5m", Source: "--time"}}})
	require.Error(t, err)
	assert.Equal(t, stopreasons.InternalError, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), "budget.tim")
}

func TestCustomConditions(t *testing.T) {
	const file = `stop:
  success:
    - type: all_tests_pass
  failure:
    - type: any
      conditions:
        - {type: max_iterations, count: 20}
        - {type: output_pattern, pattern: "DROP TABLE"}
`
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, file)})
	require.NoError(t, err)
	require.Len(t, cfg.Stop.Success, 1)
	assert.Equal(t, stopconditions.TypeAllTestsPass, cfg.Stop.Success[0].Type())
	require.Len(t, cfg.Stop.Failure, 1)
	assert.Equal(t, stopconditions.TypeAny, cfg.Stop.Failure[0].Type())
	assert.Empty(t, cfg.Stop.Conditions)

	tests := []struct {
		name, file string
		env        []string
		prefix     string
	}{
		{name: "file", file: "stop:\n  success:\n    - type: all_tests_pass\n    - type: bogus\n",
			prefix: "runr.yaml: stop.success[1].type: "},
		{name: "nested field", file: "stop:\n  conditions:\n    - type: not\n      condition: {type: max_iterations, count: 0}\n",
			prefix: "runr.yaml: stop.conditions[0].condition.count: "},
		{name: "env", env: []string{`RUNR_STOP_FAILURE=[{"type": "max_iterations"}]`},
			prefix: "RUNR_STOP_FAILURE: stop.failure[0].count: "},
		{name: "not a list", file: "stop:\n  success: all_tests_pass\n",
			prefix: "runr.yaml: stop.success: all_tests_pass is not a list of conditions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := loadErr(t, LoadOptions{RepoRoot: repo(t, tt.file), Environ: tt.env})
			assert.True(t, strings.HasPrefix(msg, tt.prefix), "got %q, want prefix %q", msg, tt.prefix)
		})
	}
}

func TestHash(t *testing.T) {
	const file = "verify:\n  commands: [go test ./...]\nbudget:\n  time: 10m\n"
	load := func(t *testing.T, file string, overrides ...Override) string {
		t.Helper()
		cfg, err := Load(LoadOptions{RepoRoot: repo(t, file), Overrides: overrides})
		require.NoError(t, err)
		h := cfg.Hash()
		require.Len(t, h, 64)
		assert.Equal(t, h, cfg.Hash(), "the hash of one config is stable")
		return h
	}
	base := load(t, file)

	same := []struct {
		name      string
		file      string
		overrides []Override
	}{
		{"reloaded", file, nil},
		{"more time", file, []Override{{Key: "budget.time", Value: "2h", Source: "--time"}}},
		{"more ticks and cost", file, []Override{
			{Key: "budget.max_ticks", Value: 1000, Source: "--max-ticks"},
			{Key: "budget.max_cost_usd", Value: "10", Source: "--max-cost"},
		}},
		{"resume policy", file + "resume:\n  max_auto_resumes: 9\n  backoff: [1s]\n", nil},
		{"same value written differently", "verify:\n  commands: [\"go test ./...\"]\n  timeout: 600s\n", nil},
	}
	for _, tt := range same {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, base, load(t, tt.file, tt.overrides...))
		})
	}

	changed := []struct {
		name      string
		file      string
		overrides []Override
	}{
		{"verify command", "verify:\n  commands: [go test -race ./...]\n", nil},
		{"verify command from a flag", file, []Override{{Key: "verify.commands", Value: []string{"make check"}, Source: "--verify"}}},
		{"stop rule", file + "stop:\n  noop: 4\n", nil},
		{"custom condition", file + "stop:\n  success: [{type: all_tests_pass}]\n", nil},
		{"agent", file + "agent:\n  kind: claude\n", nil},
	}
	for _, tt := range changed {
		t.Run(tt.name, func(t *testing.T) {
			assert.NotEqual(t, base, load(t, tt.file, tt.overrides...))
		})
	}
}

func TestParseBudgetTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "30m", want: 30 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "45", want: 45 * time.Minute},
		{in: " 45 ", want: 45 * time.Minute},
		{in: "1.5", want: 90 * time.Second},
		{in: "90s", want: 90 * time.Second},
		{in: "banana", err: "not a duration (use 30m, 1h30m, or minutes as a number)"},
		{in: "", err: "not a duration (use 30m, 1h30m, or minutes as a number)"},
		{in: "NaN", err: "not a duration (use 30m, 1h30m, or minutes as a number)"},
		{in: "0", err: "not positive (give a time greater than 0, e.g. 30m)"},
		{in: "1e300", err: "too large (the longest time is about 290 years)"},
		{in: "-10m", err: "not positive (give a time greater than 0, e.g. 30m)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseBudgetTime(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.Equal(t, tt.err, err.Error())
				assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d)
		})
	}
}

// The example file documents every key with its default, so loading it must
// give exactly the defaults.
func TestExampleConfig(t *testing.T) {
	path := filepath.Join("..", "..", "configs", "runr.example.yaml")
	cfg, err := Load(LoadOptions{RepoRoot: repo(t, ""), ConfigFile: path})
	require.NoError(t, err)
	defaults, err := Load(LoadOptions{RepoRoot: repo(t, "")})
	require.NoError(t, err)
	assert.Equal(t, defaults.Raw, cfg.Raw)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(data, &doc))
	for _, key := range Keys() {
		var node any = doc
		for _, part := range strings.Split(key, ".") {
			m, ok := node.(map[string]any)
			require.True(t, ok, "%s: %v is not a mapping", key, node)
			node, ok = m[part]
			require.True(t, ok, "configs/runr.example.yaml does not set %s", key)
		}
	}
}

func TestDocsMentionEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	require.NoError(t, err)
	doc := string(data)
	for _, key := range Keys() {
		assert.Contains(t, doc, "`"+key+"`", "docs/configuration.md does not describe %s", key)
		assert.Contains(t, doc, EnvName(key), "docs/configuration.md does not name %s", EnvName(key))
	}
}

func TestOneYAMLDocument(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"separator", "budget:\n  time: 5m\n---\nstop:\n  max_ticks: 3\n", "runr.yaml:3: a second YAML document starts here"},
		{"end marker", "budget:\n  time: 5m\n...\nstop:\n  max_ticks: 3\n", "runr.yaml:3: the YAML document ends here (...) but more follows"},
		{"end marker then separator", "budget:\n  time: 5m\n...\n---\nstop:\n  max_ticks: 3\n", "runr.yaml:4: a second YAML document starts here"},
		{"trailing separator", "budget:\n  time: 5m\n---\n", "runr.yaml:3: a second YAML document starts here"},
		{"one document with markers", "---\nbudget:\n  time: 5m\n...\n# done\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte(tc.yaml), 0o644))
			_, err := Load(LoadOptions{RepoRoot: dir})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestConfigFileIsReadWithABound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte("# "+strings.Repeat("x", maxFileBytes)+"\n"), 0o644))
	for _, file := range []string{big, "/dev/zero"} {
		_, err := Load(LoadOptions{RepoRoot: dir, ConfigFile: file})
		require.Error(t, err, file)
		assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
	}
}

func TestExplicitListsTheKeysALayerSet(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "runr.yaml"), []byte("scope:\n  protect: []\nstop:\n  noop: 3\n"), 0o644))
	c, err := Load(LoadOptions{RepoRoot: repo, Environ: []string{"RUNR_SCOPE_DENY=[]", "RUNR_SCOPE_ALLOW="},
		Overrides: []Override{{Key: "task", Value: "TASK.md"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"task", "scope.deny", "scope.protect", "stop.noop"}, c.Explicit,
		"an empty list and a default value count once set; an empty variable is unset")
}
