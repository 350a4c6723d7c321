package watch

import (
	"fmt"
	"testing"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// benchStore is a store of n stopped runs, each with a few milestones.
func benchStore(b *testing.B, n int) *state.Store {
	b.Helper()
	store, err := state.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		st := &state.State{RunID: state.NewRunID(at), RunStatus: stopreasons.RunStopped, Phase: state.PhaseStopped, CreatedAt: at,
			Tick: 12, ElapsedMS: 60_000, Statistics: state.Statistics{TotalMilestones: 3, Approved: 2},
			StopReason: state.NewStopReason(stopreasons.Timeout, 2, "time"),
			Milestones: []state.Milestone{{Goal: fmt.Sprint("goal ", i), Status: state.MilestoneApproved}, {Goal: "b", Status: state.MilestoneApproved}, {Goal: "c", Status: state.MilestoneInProgress}}}
		if err := store.Create(st); err != nil {
			b.Fatal(err)
		}
	}
	return store
}

// BenchmarkSourceRuns1000: one refresh of the dashboard over 1,000 runs,
// the first (every summary read) and the next ones (state.json unchanged:
// a stat each).
func BenchmarkSourceRuns1000(b *testing.B) {
	store := benchStore(b, 1000)
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			src := NewSource(store)
			if _, err := src.Runs(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("again", func(b *testing.B) {
		src := NewSource(store)
		if _, err := src.Runs(); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := src.Runs(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
