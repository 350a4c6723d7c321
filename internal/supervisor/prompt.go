package supervisor

import (
	"fmt"
	"strings"

	"github.com/runr-dev/runr/internal/state"
)

func taskTitle(task string) string {
	for _, line := range strings.Split(task, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
		if line != "" {
			if r := []rune(line); len(r) > 120 {
				line = string(r[:120]) + "…"
			}
			return line
		}
	}
	return "the task"
}

// BuildPrompt is the prompt of one implement: the task, the current
// milestone, and feedback from the last failed attempt. The status
// instructions never put a completion signal alone on a line, so an agent
// that echoes its prompt does not signal by accident.
func BuildPrompt(st *state.State, promise string) string {
	var b strings.Builder
	n := len(st.Milestones)
	i := st.MilestoneIndex
	m := st.Milestones[i]
	fmt.Fprintf(&b, "# Task\n\n%s\n\n", strings.TrimSpace(st.Task.Prompt))
	if n > 1 {
		goal := m.Goal
		if block := milestoneBlock(st.Task.Prompt, i, m.Goal); strings.Contains(block, "\n") {
			goal = block // the item with its indented lines and nested items
		}
		fmt.Fprintf(&b, "# Current milestone (%d of %d)\n\n%s\n\n", i+1, n, goal)
		fmt.Fprintf(&b, "Work on this milestone only; the others come later or are done.\n\n")
	}
	if f := st.LastFailure; f != nil && len(m.Attempts) > 0 && lastOutcomeFailed(m) {
		b.WriteString("# Feedback from the last attempt\n\n")
		switch f.Phase {
		case state.PhaseReview:
			fmt.Fprintf(&b, "The review (`%s`) did not approve the work. Its notes:\n\n```\n%s\n```\n\n", f.Command, strings.TrimSpace(f.Notes))
		case state.PhaseImplement:
			fmt.Fprintf(&b, "The last agent call failed (exit %d). Its error output:\n\n```\n%s\n```\n\n", f.ExitCode, strings.TrimSpace(f.Tail))
		default:
			fmt.Fprintf(&b, "The check `%s` failed with exit code %d. The end of its output:\n\n```\n%s\n```\n\n", f.Command, f.ExitCode, strings.TrimSpace(f.Tail))
		}
		if f.Signature != "" && st.Counters.SameError > 1 {
			fmt.Fprintf(&b, "This same error (signature %s) came back %d times in a row: try a different approach.\n\n", f.Signature, st.Counters.SameError)
		}
	}
	b.WriteString("# When you stop\n\n")
	fmt.Fprintf(&b, "When the %s is complete, end your final message with a line reading exactly `RUNR_STATUS: done` (or the line `%s`). ", milestoneWord(n), promise)
	b.WriteString("If you cannot go on without a person, end with a line reading `RUNR_STATUS: blocked` followed by what you need. ")
	b.WriteString("If you tried and failed, end with `RUNR_STATUS: failed`.\n")
	return b.String()
}

func milestoneWord(n int) string {
	if n > 1 {
		return "milestone"
	}
	return "task"
}

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
