package stopconditions

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCustomScript judges a script from the result the supervisor handed
// in; running it is the supervisor's (internal/supervisor's scripts tests).
func TestCustomScript(t *testing.T) {
	ok := customScript{script: "./ok.sh", timeout: 10 * time.Second}
	fail := customScript{script: "./fail.sh", timeout: 10 * time.Second}
	ctxScript := customScript{script: "./ctx.sh", args: []string{"--min", "80"}, timeout: 10 * time.Second}
	hang := customScript{script: "./hang.sh", timeout: 500 * time.Millisecond}
	missing := customScript{script: "./nope.sh", timeout: 10 * time.Second}

	tests := []struct {
		name    string
		cond    customScript
		result  *ScriptResult // nil: not run
		met     bool
		message string
	}{
		{"exit 0 is met", ok, &ScriptResult{}, true, "script ./ok.sh exited 0"},
		{"non-zero is not met and says why", fail, &ScriptResult{ExitCode: 3, Output: "checking\ncoverage 61% below 80%\n"}, false,
			"script ./fail.sh exited 3: coverage 61% below 80%"},
		{"arguments are named", ctxScript, &ScriptResult{}, true, "script ./ctx.sh --min 80 exited 0"},
		{"non-zero without output", ctxScript, &ScriptResult{ExitCode: 1}, false, "script ./ctx.sh --min 80 exited 1"},
		{"timeout", hang, &ScriptResult{ExitCode: -1, Signal: "killed", TimedOut: true}, false,
			"script ./hang.sh ran past its timeout of 500ms and was killed"},
		{"stopped by the run", hang, &ScriptResult{ExitCode: -1, Signal: "terminated", Stopped: true}, false,
			"script ./hang.sh was stopped: the run is stopping"},
		{"ended by a signal of its own", hang, &ScriptResult{ExitCode: -1, Signal: "segmentation fault"}, false,
			"script ./hang.sh could not run: it was ended by signal segmentation fault"},
		{"not run", ok, nil, false, "script ./ok.sh was not run: the run is stopping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &Snapshot{}
			if tt.result != nil {
				snap.Scripts = map[string]ScriptResult{tt.cond.key(): *tt.result}
			}
			got := tt.cond.Evaluate(snap)
			assert.Equal(t, tt.met, got.Met)
			assert.Equal(t, boolProgress(tt.met), got.Progress)
			assert.Equal(t, tt.message, got.Message)
		})
	}

	t.Run("missing script", func(t *testing.T) {
		got := missing.Evaluate(&Snapshot{Scripts: map[string]ScriptResult{missing.key(): {ExitCode: -1, Err: "run ./nope.sh: no such file"}}})
		assert.False(t, got.Met)
		assert.True(t, strings.HasPrefix(got.Message, "script ./nope.sh could not run: "), got.Message)
	})
	t.Run("another script's result is not taken", func(t *testing.T) {
		got := ok.Evaluate(&Snapshot{Scripts: map[string]ScriptResult{fail.key(): {}}})
		assert.False(t, got.Met)
	})
}

func TestScripts(t *testing.T) {
	conds, err := DecodeList("stop.failure", []any{
		map[string]any{"type": "custom_script", "script": "./check.sh"},
		map[string]any{"type": "not", "condition": map[string]any{"type": "custom_script", "script": "lint", "args": []any{"-q"}, "timeout": "5s"}},
		map[string]any{"type": "any", "conditions": []any{
			map[string]any{"type": "custom_script", "script": "./check.sh"}, // the same process: run once
			map[string]any{"type": "custom_script", "script": "./check.sh", "args": []any{"--all"}},
		}},
		map[string]any{"type": "never"},
	})
	require.NoError(t, err)
	scripts := Scripts(conds)
	require.Len(t, scripts, 3)
	assert.Equal(t, Script{Key: scripts[0].Key, Program: "./check.sh", Timeout: DefaultScriptTimeout}, scripts[0])
	assert.Equal(t, Script{Key: scripts[1].Key, Program: "lint", Args: []string{"-q"}, Timeout: 5 * time.Second}, scripts[1])
	assert.Equal(t, Script{Key: scripts[2].Key, Program: "./check.sh", Args: []string{"--all"}, Timeout: DefaultScriptTimeout}, scripts[2])
	assert.NotEqual(t, scripts[0].Key, scripts[2].Key)

	// The keys are the ones the conditions look their results up by.
	results := map[string]ScriptResult{scripts[0].Key: {}, scripts[1].Key: {ExitCode: 1}, scripts[2].Key: {ExitCode: 1}}
	assert.True(t, conds[0].Evaluate(&Snapshot{Scripts: results}).Met)
	assert.True(t, conds[1].Evaluate(&Snapshot{Scripts: results}).Met, "not of a failing lint")
}

// TestUnjudgedScriptNeverFires: a script the run did not get to run (it is
// stopping for a signal or its budget) is unknown, not false, so a `not`
// of it, or an all/any built on it, cannot make the run stop for a
// condition nobody checked; a known answer elsewhere still counts.
func TestUnjudgedScriptNeverFires(t *testing.T) {
	script := customScript{script: "./ok.sh", timeout: 10 * time.Second}
	unmet := never{}
	met := not{condition: never{}}
	stopping := &Snapshot{} // no script results: the run is stopping
	for _, tt := range []struct {
		name    string
		cond    Condition
		met     bool
		unknown bool
	}{
		{"the script", script, false, true},
		{"not script", not{condition: script}, false, true},
		{"not not script", not{condition: not{condition: script}}, false, true},
		{"all with an unjudged part", all{conditions: []Condition{met, script}}, false, true},
		{"not all with an unjudged part", not{condition: all{conditions: []Condition{met, script}}}, false, true},
		{"all with a part known unmet", all{conditions: []Condition{unmet, script}}, false, false},
		{"not all with a part known unmet", not{condition: all{conditions: []Condition{unmet, script}}}, true, false},
		{"any with an unjudged part", anyOf{conditions: []Condition{unmet, script}}, false, true},
		{"not any with an unjudged part", not{condition: anyOf{conditions: []Condition{unmet, script}}}, false, true},
		{"any with a part met", anyOf{conditions: []Condition{met, script}}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cond.Evaluate(stopping)
			assert.Equal(t, tt.met, got.Met, got.Message)
			assert.Equal(t, tt.unknown, got.Unknown, got.Message)
		})
	}

	v := Evaluate(&Snapshot{TotalMilestones: 1, Milestone: 1}, Rules{
		Success: []Condition{not{condition: script}},
		Failure: []Condition{not{condition: script}},
	}, Limits{})
	assert.Nil(t, v.Stop, "an unjudged script stops nothing")
}
