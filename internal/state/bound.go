package state

import (
	"unicode/utf8"
)

// Bounds that keep state.json small whatever the run's length or the
// task's size (DESIGN §5): what grows with every tick lives in the
// timeline, and state.json keeps only what the stop rules, a resume and
// `runr status` need.
const (
	// MaxAttempts is how many attempts of a milestone state.json lists;
	// older ones are summed up in Milestone.Earlier.
	MaxAttempts = 20
	// MaxGoalBytes bounds a milestone's goal; a longer checklist item (or
	// a task that is one long line) is cut, and its whole text stays in
	// task.md.
	MaxGoalBytes = 2048
	// MaxAutoResumeHistory is how many automatic resumes
	// auto_resume.history lists; auto_resume.count counts them all.
	MaxAutoResumeHistory = 20
)

// Finished reports whether the attempt has an outcome that counts: one
// that is neither open nor stopped.
func (a Attempt) Finished() bool {
	return a.Outcome != "" && a.Outcome != OutcomeStopped && a.Outcome != OutcomeSwitched
}

// Judged reports whether the attempt was judged by a check or a review:
// finished, and not an incomplete iteration.
func (a Attempt) Judged() bool {
	return a.Finished() && a.Outcome != OutcomeIncomplete
}

// AttemptCount is the number of attempts of the milestone, listed or not.
func (m *Milestone) AttemptCount() int {
	n := len(m.Attempts)
	if m.Earlier != nil {
		n += m.Earlier.Count
	}
	return n
}

// Attempted reports whether the milestone has a finished attempt (DESIGN
// §4: it counts as attempted).
func (m *Milestone) Attempted() bool {
	if e := m.Earlier; e != nil {
		for outcome, n := range e.Outcomes {
			if n > 0 && (Attempt{Outcome: outcome}).Finished() {
				return true
			}
		}
	}
	for _, a := range m.Attempts {
		if a.Finished() {
			return true
		}
	}
	return false
}

// JudgedAttempts counts the milestone's judged attempts, listed or not.
func (m *Milestone) JudgedAttempts() int {
	n := 0
	if e := m.Earlier; e != nil {
		for outcome, c := range e.Outcomes {
			if (Attempt{Outcome: outcome}).Judged() {
				n += c
			}
		}
	}
	for _, a := range m.Attempts {
		if a.Judged() {
			n++
		}
	}
	return n
}

// Compact applies the bounds of state.json to st: each milestone lists its
// last MaxAttempts attempts and sums up the older ones, goals are cut to
// MaxGoalBytes, auto_resume.history keeps its last MaxAutoResumeHistory
// records; and it sets the figures `runr status` reads from the head of
// the file (statistics.total_milestones and approved) from the milestones.
// Save, CreateRun and Load call it, so a run held in memory stays as small
// as its file.
func (st *State) Compact() {
	approved := 0
	for i := range st.Milestones {
		m := &st.Milestones[i]
		if len(m.Goal) > MaxGoalBytes {
			m.Goal, m.GoalCut = cutText(m.Goal, MaxGoalBytes), true
		}
		if extra := len(m.Attempts) - MaxAttempts; extra > 0 {
			for _, a := range m.Attempts[:extra] {
				m.Earlier = m.Earlier.add(a)
			}
			// A new array: the dropped attempts' memory goes, and nothing
			// holding the old one writes into the kept attempts unseen.
			m.Attempts = append(make([]Attempt, 0, MaxAttempts+1), m.Attempts[extra:]...)
		}
		if m.Status == MilestoneApproved {
			approved++
		}
	}
	st.Statistics.TotalMilestones = len(st.Milestones)
	st.Statistics.Approved = approved
	if h := st.AutoResume.History; len(h) > MaxAutoResumeHistory {
		st.AutoResume.History = append([]AutoResumeRecord(nil), h[len(h)-MaxAutoResumeHistory:]...)
	}
	if st.StopReason != nil && st.StopReason.Details != nil && len(st.StopReason.Details.MilestoneGoal) > MaxGoalBytes {
		st.StopReason.Details.MilestoneGoal = cutText(st.StopReason.Details.MilestoneGoal, MaxGoalBytes)
	}
}

// settled reports whether the milestone's work is over: approved, failed
// or rejected.
func (m *Milestone) settled() bool {
	switch m.Status {
	case MilestoneApproved, MilestoneFailed, MilestoneRejected:
		return true
	}
	return false
}

// add sums up attempt a into e (nil: none yet) and returns it. An attempt
// still open when it is dropped was never closed (its runr died, and many
// attempts came after it): it counts as stopped.
func (e *EarlierAttempts) add(a Attempt) *EarlierAttempts {
	if e == nil {
		e = &EarlierAttempts{FirstTick: a.Tick}
	}
	if e.Outcomes == nil {
		e.Outcomes = map[string]int{}
	}
	outcome := a.Outcome
	if outcome == "" {
		outcome = OutcomeStopped
	}
	e.Count++
	e.Outcomes[outcome]++
	e.LastTick = max(e.LastTick, a.Tick)
	e.FirstTick = min(e.FirstTick, a.Tick)
	e.DurationMS += a.DurationMS
	e.CostUSD += a.CostUSD
	return e
}

// cutText cuts s to at most n bytes on a rune boundary, marking the cut
// with an ellipsis.
func cutText(s string, n int) string {
	const mark = "…"
	if len(s) <= n {
		return s
	}
	end := n - len(mark)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}
