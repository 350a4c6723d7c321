package task

import (
	"fmt"
	"strings"
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

// Call is what the prompt of one agent call is made of.
type Call struct {
	Task       string    // the task's text
	Milestone  int       // the current milestone, from 0
	Milestones int       // how many milestones the run has
	Goal       string    // the current milestone's goal, as the run recorded it
	Feedback   *Feedback // the failure of the milestone's last attempt; nil when that attempt did not fail
	Promise    string    // the completion promise (agent.completion_promise)
}

// Feedback is what went wrong in the milestone's last attempt.
type Feedback struct {
	From      Source
	Command   string // the check or the review that did not pass
	ExitCode  int
	Output    string // the end of the failing output (a check's, or the agent's error output)
	Notes     string // the review's notes
	Signature string // the error signature
	SameError int    // how many failed attempts in a row had this signature
}

// Source is what failed in an attempt.
type Source int

const (
	FromCheck  Source = iota // a verify command
	FromAgent                // the agent call itself
	FromReview               // the review, which did not approve
	// FromUntested: the verify commands passed without showing that they
	// ran the changed lines or any test.
	FromUntested
)

// Prompt is the prompt of one implement: the task, the current
// milestone, and feedback from the last failed attempt. The status
// instructions never put a completion signal alone on a line, so an agent
// that echoes its prompt does not signal by accident.
func Prompt(c Call) string {
	var b strings.Builder
	n := c.Milestones
	i := c.Milestone
	fmt.Fprintf(&b, "# Task\n\n%s\n\n", strings.TrimSpace(c.Task))
	if n > 1 {
		goal := c.Goal
		if block := milestoneBlock(c.Task, i, c.Goal); strings.Contains(block, "\n") {
			goal = block // the item with its indented lines and nested items
		}
		fmt.Fprintf(&b, "# Current milestone (%d of %d)\n\n%s\n\n", i+1, n, goal)
		fmt.Fprintf(&b, "Work on this milestone only; the others come later or are done.\n\n")
	}
	if f := c.Feedback; f != nil {
		b.WriteString("# Feedback from the last attempt\n\n")
		switch f.From {
		case FromReview:
			fmt.Fprintf(&b, "The review (`%s`) did not approve the work. Its notes:\n\n```\n%s\n```\n\n", f.Command, strings.TrimSpace(f.Notes))
		case FromUntested:
			fmt.Fprintf(&b, "The verify commands passed, but did not show that the work is tested (%s):\n\n```\n%s\n```\n\n", f.Command, strings.TrimSpace(f.Output))
		case FromAgent:
			fmt.Fprintf(&b, "The last agent call failed (exit %d). Its error output:\n\n```\n%s\n```\n\n", f.ExitCode, strings.TrimSpace(f.Output))
		default:
			fmt.Fprintf(&b, "The check `%s` failed with exit code %d. The end of its output:\n\n```\n%s\n```\n\n", f.Command, f.ExitCode, strings.TrimSpace(f.Output))
		}
		if f.Signature != "" && f.SameError > 1 {
			fmt.Fprintf(&b, "This same error (signature %s) came back %d times in a row: try a different approach.\n\n", f.Signature, f.SameError)
		}
	}
	b.WriteString("# When you stop\n\n")
	fmt.Fprintf(&b, "When the %s is complete, end your final message with a line reading exactly `RUNR_STATUS: done` (or the line `%s`). ", milestoneWord(n), c.Promise)
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
