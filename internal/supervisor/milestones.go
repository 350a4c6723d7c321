package supervisor

import (
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/task"
)

// Milestones are a new run's milestones for the task text: the task's
// goals (task.Goals), each pending.
func Milestones(text string) []state.Milestone {
	goals := task.Goals(text)
	out := make([]state.Milestone, len(goals))
	for i, g := range goals {
		out[i] = state.Milestone{Goal: g, Status: state.MilestonePending}
	}
	return out
}

// BuildPrompt is the prompt of the current milestone's next agent call
// (task.Prompt): feedback from the last failure is given only while the
// milestone's last finished attempt failed or was rejected, never after an
// approved one.
func BuildPrompt(st *state.State, promise string) string {
	i := st.MilestoneIndex
	m := st.Milestones[i]
	c := task.Call{Task: st.Task.Prompt, Milestone: i, Milestones: len(st.Milestones), Goal: m.Goal, Promise: promise}
	if f := st.LastFailure; f != nil && len(m.Attempts) > 0 && lastOutcomeFailed(m) {
		c.Feedback = &task.Feedback{From: failedIn(f.Phase), Command: f.Command, ExitCode: f.ExitCode,
			Output: f.Tail, Notes: f.Notes, Signature: f.Signature, SameError: st.Counters.SameError}
		if f.Untested != nil {
			c.Feedback.From = task.FromUntested
		}
	}
	return task.Prompt(c)
}

// failedIn is what failed in a phase: the review, the agent (implement),
// or a check.
func failedIn(phase string) task.Source {
	switch phase {
	case state.PhaseReview:
		return task.FromReview
	case state.PhaseImplement:
		return task.FromAgent
	}
	return task.FromCheck
}

// lastOutcomeFailed reports whether the milestone's last judged attempt
// failed or was rejected; attempts cut short or handed to another agent are
// passed over.
func lastOutcomeFailed(m state.Milestone) bool {
	for i := len(m.Attempts) - 1; i >= 0; i-- {
		switch m.Attempts[i].Outcome {
		case state.OutcomeFailed, state.OutcomeRejected:
			return true
		case "", state.OutcomeStopped, state.OutcomeSwitched:
			continue
		default:
			return false
		}
	}
	return false
}
