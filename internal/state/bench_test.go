package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// tickState is the state of a run at tick ticks: one milestone approved
// every three ticks (implement, verify, checkpoint), the current one in
// progress, as the supervisor holds it.
func tickState(b *testing.B, s *Store, ticks int) *State {
	b.Helper()
	st := &State{RunID: NewRunID(time.Now()), RunStatus: stopreasons.RunRunning, Phase: PhaseImplement}
	require.NoError(b, s.Create(st))
	for i := range ticks/3 + 1 {
		m := Milestone{Goal: fmt.Sprintf("step %d: the milestone's goal as the task states it", i+1), Status: MilestoneApproved}
		m.Attempts = []Attempt{{Tick: 3*i + 1, Iteration: i + 1, Outcome: OutcomeApproved, DurationMS: 12, Log: fmt.Sprintf("logs/tick-%04d-implement.log", 3*i+1)}}
		st.Milestones = append(st.Milestones, m)
	}
	st.Milestones[len(st.Milestones)-1].Status = MilestoneInProgress
	st.Tick, st.Iteration, st.MilestoneIndex = ticks, ticks/3+1, ticks/3
	return st
}

// BenchmarkSaveTick is the durable end-of-tick write of state.json
// (Store.Save: encode, temp file, fsync, rename, directory fsync) at tick
// 200 and at tick 1,000 of a run: its cost must not grow with the run.
func BenchmarkSaveTick(b *testing.B) {
	for _, ticks := range []int{200, 1000} {
		b.Run(fmt.Sprintf("tick%d", ticks), func(b *testing.B) {
			s, err := Open(b.TempDir())
			require.NoError(b, err)
			st := tickState(b, s, ticks)
			b.ReportAllocs()
			for b.Loop() {
				st.Tick++
				require.NoError(b, s.Save(st))
			}
		})
	}
}

// BenchmarkAppendTick is the timeline's share of a tick: one event
// appended to the run's timeline.jsonl.
func BenchmarkAppendTick(b *testing.B) {
	s, err := Open(b.TempDir())
	require.NoError(b, err)
	st := &State{RunID: NewRunID(time.Now())}
	require.NoError(b, s.Create(st))
	tl, err := s.OpenTimeline(st.RunID)
	require.NoError(b, err)
	defer tl.Close()
	b.ReportAllocs()
	tick := 0
	for b.Loop() {
		tick++
		require.NoError(b, tl.Append(tick, PhaseVerify, TickEvent{Phase: PhaseVerify, Next: PhaseCheckpoint, Milestone: 1, Outcome: "verify passed"}))
	}
}

// BenchmarkLoadRun reads back the state.json of a 1,000-tick run, as status
// and resume do.
func BenchmarkLoadRun(b *testing.B) {
	s, err := Open(b.TempDir())
	require.NoError(b, err)
	st := tickState(b, s, 1000)
	require.NoError(b, s.Save(st))
	b.ReportAllocs()
	for b.Loop() {
		got, err := s.Load(st.RunID)
		require.NoError(b, err)
		require.Equal(b, st.Tick, got.Tick)
	}
}
