package state

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// What Save writes decodes to the state it was given, save after save,
// while milestones settle, fold and change under the cache of their
// encodings; and it is valid JSON with the milestones last.
func TestSaveEncodingMatchesTheState(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	st := &State{RunID: NewRunID(time.Now()), RunStatus: stopreasons.RunRunning, Phase: PhaseImplement}
	for i := range 60 {
		st.Milestones = append(st.Milestones, Milestone{Goal: fmt.Sprintf("goal %d", i), Status: MilestonePending})
	}
	require.NoError(t, s.Create(st))
	check := func() {
		t.Helper()
		require.NoError(t, s.Save(st))
		raw, err := s.ReadRunFile(st.RunID, "state.json")
		require.NoError(t, err)
		require.True(t, json.Valid(raw), "state.json is JSON")
		var plain, cached any
		want, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(want, &plain))
		require.NoError(t, json.Unmarshal(raw, &cached))
		assert.Equal(t, plain, cached, "the cached encoding says what the state says")
		got, err := s.Load(st.RunID)
		require.NoError(t, err)
		assert.Equal(t, st.Milestones, got.Milestones)
	}
	for i := range 50 {
		m := &st.Milestones[i]
		m.Status = MilestoneInProgress
		m.Attempts = append(m.Attempts, Attempt{Tick: 3*i + 1, Outcome: OutcomeFailed, ErrorSignature: "sig"})
		check()
		m.Attempts = append(m.Attempts, Attempt{Tick: 3*i + 2, Outcome: OutcomeApproved})
		m.Status, m.TreeHash, m.Commit = MilestoneApproved, fmt.Sprintf("hash%d", i), fmt.Sprintf("%040d", i)
		st.MilestoneIndex = i + 1
		check()
	}
	// A settled milestone that changes all the same is encoded anew.
	st.Milestones[3].Goal = "another goal"
	check()
	// And one whose attempts go past the last MaxAttempts.
	for i := range MaxAttempts + 5 {
		st.Milestones[5].Attempts = append(st.Milestones[5].Attempts, Attempt{Tick: 1000 + i, Outcome: OutcomeRejected})
	}
	check()
	assert.Len(t, st.Milestones[5].Attempts, MaxAttempts)

	// The milestones no attempt has touched are kept encoded too; whatever
	// changes in one of them is encoded anew, and so is its return to
	// untouched.
	p := &st.Milestones[55]
	for _, c := range []struct {
		name         string
		change, undo func()
	}{
		{"goal", func() { p.Goal = "an edited goal" }, func() { p.Goal = "goal 55" }},
		{"goal_cut", func() { p.GoalCut = true }, func() { p.GoalCut = false }},
		{"attempts", func() { p.Attempts = []Attempt{} }, func() { p.Attempts = nil }},
		{"retries", func() { p.Retries = 2 }, func() { p.Retries = 0 }},
		{"edges", func() { p.Edges = map[string]int{"verify->implement": 1} }, func() { p.Edges = nil }},
		{"review_rounds", func() { p.ReviewRounds = 1 }, func() { p.ReviewRounds = 0 }},
		{"tree_hash", func() { p.TreeHash = "hash" }, func() { p.TreeHash = "" }},
		{"commit", func() { p.Commit = "c0ffee0000000000000000000000000000000000" }, func() { p.Commit = "" }},
		{"earlier_attempts", func() { p.Earlier = &EarlierAttempts{Count: 1} }, func() { p.Earlier = nil }},
		{"status", func() { p.Status = MilestoneInProgress }, func() { p.Status = MilestonePending }},
	} {
		check()
		c.change()
		t.Log("a pending milestone's", c.name, "changes")
		check()
		c.undo()
	}
	check()
}
