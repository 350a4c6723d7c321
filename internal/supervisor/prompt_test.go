package supervisor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/task"
)

func goals(ms []state.Milestone) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Goal)
	}
	return out
}

// TestMilestonesStartPending: a new run's milestones are the task's goals,
// each pending, with no attempt.
func TestMilestonesStartPending(t *testing.T) {
	for _, text := range []string{
		"# Work\n- [ ] fix Add\n- [x] done already\n* [ ] star item  \n+ [ ] plus item\n",
		"\n## Make the tests pass\n\nSome text.\n",
		"  \n",
	} {
		ms := Milestones(text)
		assert.Equal(t, task.Goals(text), goals(ms))
		for i, m := range ms {
			assert.Equal(t, state.MilestonePending, m.Status)
			assert.Empty(t, m.Attempts, "milestone %d", i)
		}
	}
}

func promptState(task string, milestone int, failure *state.Failure, outcome string) *state.State {
	st := &state.State{Task: state.Task{Prompt: task}, Milestones: Milestones(task), MilestoneIndex: milestone}
	if outcome != "" {
		st.Milestones[milestone].Attempts = []state.Attempt{{Outcome: outcome}}
	}
	st.LastFailure = failure
	return st
}

// An agent that echoes its prompt must never signal by doing so: the
// prompt has no line that is a completion signal on its own.
func TestPromptNeverSignalsWhenEchoed(t *testing.T) {
	const promise = "<promise>COMPLETE</promise>"
	task := "# Work\n- [ ] fix Add\n- [ ] add Max\n"
	for _, st := range []*state.State{
		promptState(task, 0, nil, ""),
		promptState(task, 1, &state.Failure{Phase: state.PhaseVerify, Command: "go test ./...", ExitCode: 1, Tail: "FAIL"}, state.OutcomeFailed),
		promptState("just one thing", 0, &state.Failure{Phase: state.PhaseImplement, ExitCode: 2, Tail: "boom"}, state.OutcomeFailed),
	} {
		prompt := BuildPrompt(st, promise)
		sig, _ := agents.DetectSignal(prompt, promise, "")
		assert.Equal(t, agents.SignalNone, sig, "the prompt alone signals:\n%s", prompt)
		assert.Contains(t, prompt, "`RUNR_STATUS: done`", "the prompt says how to signal")
		assert.Contains(t, prompt, promise)
	}
}

func TestPromptCarriesTheMilestoneAndFeedback(t *testing.T) {
	task := "# Work\n- [ ] fix Add\n- [ ] add Max\n"
	tests := []struct {
		name    string
		failure *state.Failure
		outcome string
		want    []string
		not     []string
	}{
		{"first attempt: no feedback", nil, "", []string{"# Current milestone (2 of 2)", "add Max"}, []string{"# Feedback"}},
		{"a failed check", &state.Failure{Phase: state.PhaseVerify, Command: "go test ./...", ExitCode: 1, Tail: "--- FAIL: TestMax"}, state.OutcomeFailed,
			[]string{"The check `go test ./...` failed with exit code 1", "--- FAIL: TestMax"}, nil},
		{"the review's notes", &state.Failure{Phase: state.PhaseReview, Command: "./review.sh", ExitCode: 1, Notes: "name it Maximum"}, state.OutcomeRejected,
			[]string{"The review (`./review.sh`) did not approve", "name it Maximum"}, nil},
		{"the agent's own error", &state.Failure{Phase: state.PhaseImplement, ExitCode: 3, Tail: "model exploded"}, state.OutcomeFailed,
			[]string{"The last agent call failed (exit 3)", "model exploded"}, nil},
		{"an approved last attempt: no stale feedback", &state.Failure{Phase: state.PhaseVerify, Command: "go test", Tail: "old"}, state.OutcomeApproved,
			nil, []string{"# Feedback", "old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prompt := BuildPrompt(promptState(task, 1, tt.failure, tt.outcome), "<promise>COMPLETE</promise>")
			require.Contains(t, prompt, "# Task")
			for _, w := range tt.want {
				assert.Contains(t, prompt, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, prompt, n)
			}
		})
	}
}
