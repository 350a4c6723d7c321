package stopconditions

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// decodeYAML decodes YAML text the way the config does: through yaml.v3 into
// plain values, then DecodeList.
func decodeYAML(t testing.TB, path, text string) ([]Condition, error) {
	t.Helper()
	var raw any
	require.NoError(t, yaml.Unmarshal([]byte(text), &raw))
	return DecodeList(path, raw)
}

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		yaml string
		want Condition
	}{
		{`[{type: max_iterations, count: 10}]`, maxIterations{count: 10}},
		{`[{type: max_iterations, count: "7"}]`, maxIterations{count: 7}},
		{`[{type: max_duration, duration: 10m}]`, maxDuration{d: 10 * time.Minute}},
		{`[{type: max_duration, duration: 15}]`, maxDuration{d: 15 * time.Minute}},
		{`[{type: max_duration, duration: "1.5"}]`, maxDuration{d: 90 * time.Second}},
		{`[{type: test_failure_streak, count: 2}]`, testFailureStreak{count: 2}},
		{`[{type: all_tests_pass}]`, allTestsPass{}},
		{`[{type: specific_tests_pass, tests: ["go test ./a", "make lint"]}]`, specificTestsPass{tests: []string{"go test ./a", "make lint"}}},
		{`[{type: no_progress, iterations: 4}]`, noProgress{iterations: 4}},
		{`[{type: file_created, path: build/out.txt}]`, fileCreated{path: "build/out.txt"}},
		{`[{type: file_created, path: a/../b.txt}]`, fileCreated{path: "a/../b.txt"}},
		{`[{type: file_contains, path: NOTES.md, content: DONE}]`, fileContains{path: "NOTES.md", content: "DONE"}},
		{`[{type: output_pattern, pattern: "all done"}]`, outputPattern{pattern: "all done"}},
		{`[{type: output_pattern, pattern: "all done", regex: false}]`, outputPattern{pattern: "all done"}},
		{`[{type: on_error}]`, onError{}},
		{`[{type: custom_script, script: ./check.sh}]`, customScript{script: "./check.sh", timeout: DefaultScriptTimeout}},
		{`[{type: custom_script, script: ./check.sh, args: [--n, 3, ""], timeout: 5s}]`, customScript{script: "./check.sh", args: []string{"--n", "3", ""}, timeout: 5 * time.Second}},
		{`[{type: custom_script, script: check, timeout: 2}]`, customScript{script: "check", timeout: 2 * time.Second}},
		{`[{type: user_signal}]`, userSignal{}},
		{`[{type: never}]`, never{}},
		{`[{type: not, condition: {type: never}}]`, not{condition: never{}}},
		{`[{type: all, conditions: [{type: all_tests_pass}, {type: any, conditions: [{type: never}, {type: user_signal}]}]}]`,
			all{conditions: []Condition{allTestsPass{}, anyOf{conditions: []Condition{never{}, userSignal{}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			got, err := decodeYAML(t, "stop.success", tt.yaml)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tt.want, got[0])
		})
	}
}

func TestDecodeRegexPatterns(t *testing.T) {
	got, err := decodeYAML(t, "stop.failure", `
- type: output_pattern
  pattern: 'FAIL\s+\d+'
  regex: true
- type: on_error
  pattern: "(?i)panic"
`)
	require.NoError(t, err)
	require.Len(t, got, 2)
	op := got[0].(outputPattern)
	require.NotNil(t, op.re)
	assert.True(t, op.re.MatchString("FAIL  12"))
	oe := got[1].(onError)
	require.NotNil(t, oe.re)
	assert.True(t, oe.re.MatchString("PANIC: boom"))
}

func TestDecodeListForms(t *testing.T) {
	got, err := DecodeList("stop.success", nil)
	require.NoError(t, err)
	assert.Empty(t, got)

	// viper hands lists of mappings over in this form.
	got, err = DecodeList("stop.success", []map[string]any{{"type": "never"}})
	require.NoError(t, err)
	assert.Equal(t, []Condition{never{}}, got)

	got, err = DecodeList("stop.success", []any{map[any]any{"type": "never"}})
	require.NoError(t, err)
	assert.Equal(t, []Condition{never{}}, got)
}

func TestDecodeInvalid(t *testing.T) {
	tests := []struct {
		yaml    string
		wantMsg string // the exact start of the message
		alsoHas string // a part of what is allowed
	}{
		{`{type: never}`, `stop.success: must be a list of conditions`, "got a mapping"},
		{`[never]`, `stop.success[0]: a condition must be a mapping with a type`, `got text "never"`},
		{`[{count: 3}]`, `stop.success[0].type: missing;`, "max_iterations"},
		{`[{type: 3}]`, `stop.success[0].type: must be text`, "got number 3"},
		{`[{type: max_iteration, count: 3}]`, `stop.success[0].type: unknown condition type "max_iteration"; allowed: all, all_tests_pass, any,`, "user_signal"},
		{`[{type: max_iterations, cout: 3}]`, `stop.success[0].cout: unknown field for a max_iterations condition; allowed: type, count`, ""},
		{`[{type: never, count: 1}]`, `stop.success[0].count: unknown field for a never condition; allowed: type`, ""},
		{`[{type: max_iterations}]`, `stop.success[0].count: missing; give a whole number of at least 1`, ""},
		{`[{type: max_iterations, count: 0}]`, `stop.success[0].count: 0 is too small; give a whole number of at least 1`, ""},
		{`[{type: test_failure_streak, count: -2}]`, `stop.success[0].count: -2 is too small`, ""},
		{`[{type: no_progress, iterations: 2.5}]`, `stop.success[0].iterations: must be a whole number of at least 1; got number 2.5`, ""},
		{`[{type: max_iterations, count: many}]`, `stop.success[0].count: must be a whole number`, `got text "many"`},
		{`[{type: max_duration}]`, `stop.success[0].duration: missing`, "10m"},
		{`[{type: max_duration, duration: soon}]`, `stop.success[0].duration: "soon" is not a duration`, "1h30m"},
		{`[{type: max_duration, duration: 0}]`, `stop.success[0].duration: must be positive`, ""},
		{`[{type: max_duration, duration: -5m}]`, `stop.success[0].duration: must be positive`, ""},
		{`[{type: max_duration, duration: 1e300}]`, `stop.success[0].duration: 1e+300 is too long`, ""},
		{`[{type: max_duration, duration: [1]}]`, `stop.success[0].duration: must be a duration such as 10m; got a list`, ""},
		{`[{type: specific_tests_pass}]`, `stop.success[0].tests: missing`, ""},
		{`[{type: specific_tests_pass, tests: []}]`, `stop.success[0].tests: is empty`, ""},
		{`[{type: specific_tests_pass, tests: ["ok", ""]}]`, `stop.success[0].tests[1]: is empty`, ""},
		{`[{type: specific_tests_pass, tests: "go test"}]`, `stop.success[0].tests: must be a list of text`, ""},
		{`[{type: file_created}]`, `stop.success[0].path: missing`, ""},
		{`[{type: file_created, path: ""}]`, `stop.success[0].path: is empty`, ""},
		{`[{type: file_created, path: /etc/passwd}]`, `stop.success[0].path: "/etc/passwd" is absolute`, "relative to the repository"},
		{`[{type: file_created, path: ../x}]`, `stop.success[0].path: "../x" leaves the repository`, ""},
		{`[{type: file_contains, path: a/../../x, content: y}]`, `stop.success[0].path: "a/../../x" leaves the repository`, ""},
		{`[{type: file_contains, path: x}]`, `stop.success[0].content: missing`, ""},
		{`[{type: output_pattern}]`, `stop.success[0].pattern: missing`, ""},
		{`[{type: output_pattern, pattern: ""}]`, `stop.success[0].pattern: is empty`, ""},
		{`[{type: output_pattern, pattern: "(", regex: true}]`, `stop.success[0].pattern: regex "(": missing closing ): ` + "`(`", "RE2"},
		{`[{type: output_pattern, pattern: x, regex: maybe}]`, `stop.success[0].regex: must be true or false`, ""},
		{`[{type: on_error, pattern: "[a-"}]`, `stop.success[0].pattern: regex "[a-": missing closing ]`, ""},
		{`[{type: on_error, pattern: ""}]`, `stop.success[0].pattern: is empty`, ""},
		{`[{type: custom_script}]`, `stop.success[0].script: missing`, ""},
		{`[{type: custom_script, script: x, args: [{a: 1}]}]`, `stop.success[0].args[0]: must be text`, ""},
		{`[{type: custom_script, script: x, timeout: 0s}]`, `stop.success[0].timeout: must be positive`, ""},
		{`[{type: all}]`, `stop.success[0].conditions: missing`, ""},
		{`[{type: any, conditions: []}]`, `stop.success[0].conditions: is empty`, ""},
		{`[{type: any, conditions: {type: never}}]`, `stop.success[0].conditions: must be a list of conditions`, ""},
		{`[{type: all, conditions: [{type: never}, {type: any, conditions: [{type: bogus}]}]}]`, `stop.success[0].conditions[1].conditions[0].type: unknown condition type "bogus"`, ""},
		{`[{type: not}]`, `stop.success[0].condition: missing`, ""},
		{`[{type: not, condition: {type: output_pattern, pattern: "(", regex: true}}]`, `stop.success[0].condition.pattern: regex "("`, ""},
		{`[{type: not, condition: [{type: never}]}]`, `stop.success[0].condition: a condition must be a mapping`, "got a list"},
		{`[{type: never}, {1: x, type: never}]`, `stop.success[1]: field names must be text; got number 1`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			_, err := decodeYAML(t, "stop.success", tt.yaml)
			require.Error(t, err)
			var se *stopreasons.Error
			require.True(t, errors.As(err, &se), "error %v is not a *stopreasons.Error", err)
			assert.Equal(t, stopreasons.ConfigInvalid, se.Code)
			assert.True(t, strings.HasPrefix(err.Error(), tt.wantMsg), "message:\n%s\nwant prefix:\n%s", err, tt.wantMsg)
			assert.Contains(t, err.Error(), tt.alsoHas)
		})
	}
}

func TestFileCreatedPaths(t *testing.T) {
	success, err := decodeYAML(t, "stop.success", `
- type: file_created
  path: out/a.txt
- type: any
  conditions:
    - type: not
      condition: {type: file_created, path: b.txt}
    - {type: file_created, path: out/a.txt}
`)
	require.NoError(t, err)
	failure, err := decodeYAML(t, "stop.failure", `[{type: file_created, path: c.txt}, {type: never}]`)
	require.NoError(t, err)
	assert.Equal(t, []string{"out/a.txt", "b.txt", "c.txt"}, FileCreatedPaths(success, failure))
}

func TestRulesValidate(t *testing.T) {
	require.NoError(t, DefaultRules().Validate())

	tests := []struct {
		name string
		edit func(*Rules)
		want string
	}{
		{"negative retries", func(r *Rules) { r.MaxMilestoneRetries = -1 }, "stop.max_milestone_retries: -1 is negative"},
		{"negative circuit breaker", func(r *Rules) { r.CircuitBreaker = -5 }, "stop.circuit_breaker: -5 is negative"},
		{"negative min attempts", func(r *Rules) { r.MinAttemptsForRates = -1 }, "stop.min_attempts_for_rates:"},
		{"negative max edge", func(r *Rules) { r.MaxEdge = -1 }, "stop.max_edge:"},
		{"retry rate above 1", func(r *Rules) { r.MaxRetryRate = 1.5 }, "stop.max_retry_rate: 1.5 is not a rate; use a fraction from 0 to 1"},
		{"reject rate negative", func(r *Rules) { r.MaxRejectRate = -0.1 }, "stop.max_reject_rate: -0.1 is not a rate"},
		{"bad mode", func(r *Rules) { r.OnMilestoneFailure = "ignore" }, `stop.on_milestone_failure: "ignore" is not a mode; use stop or skip`},
		{"empty mode", func(r *Rules) { r.OnMilestoneFailure = "" }, `stop.on_milestone_failure: "" is not a mode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := DefaultRules()
			tt.edit(&r)
			err := r.Validate()
			require.Error(t, err)
			assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "message %q, want prefix %q", err, tt.want)
		})
	}

	r := DefaultRules()
	r.MaxRetryRate, r.MaxRejectRate, r.OnMilestoneFailure = 0, 1, OnFailureSkip
	r.MaxMilestoneRetries, r.CircuitBreaker = 0, 0
	assert.NoError(t, r.Validate(), "0 turns rules off and 1 is a valid rate")
}

func TestLimitsValidate(t *testing.T) {
	assert.NoError(t, Limits{}.Validate())
	assert.NoError(t, Limits{Time: 30 * time.Minute, MaxTicks: 200}.Validate())
	for want, l := range map[string]Limits{
		"budget.time:":           {Time: -time.Second},
		"budget.max_ticks:":      {MaxTicks: -1},
		"budget.max_iterations:": {MaxIterations: -1},
		"budget.max_cost_usd:":   {MaxCostUSD: -0.5},
		"budget.max_tokens:":     {MaxTokens: -1},
	} {
		err := l.Validate()
		require.Error(t, err, want)
		assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
		assert.True(t, strings.HasPrefix(err.Error(), want), "message %q, want prefix %q", err, want)
	}
}

func TestScriptPrograms(t *testing.T) {
	conds, err := DecodeList("stop.failure", []any{
		map[string]any{"type": "custom_script", "script": "./check.sh"},
		map[string]any{"type": "not", "condition": map[string]any{"type": "custom_script", "script": "lint", "args": []any{"-q"}}},
		map[string]any{"type": "never"},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"./check.sh", "lint"}, ScriptPrograms(conds))
}
