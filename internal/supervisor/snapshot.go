package supervisor

import (
	"context"
	"time"

	"github.com/runr-dev/runr/internal/rulestate"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// snapshot is the run as the stop conditions see it after a step decided
// as d: the recorded run with what only the live run knows.
func (s *Supervisor) snapshot(ctx context.Context, d Decision) *stopconditions.Snapshot {
	st := s.st
	st.Statistics = st.Tally()
	elapsed := s.elapsed()
	if s.started.IsZero() {
		elapsed = time.Duration(st.ElapsedMS) * time.Millisecond
	}
	snap := rulestate.Snapshot(st, elapsed)
	snap.ReviewRepeated = d.ReviewRepeated
	snap.LastOutput = s.lastOutput
	snap.LastError = d.ErrEvent
	snap.StopRequested = s.store.StopRequested(st.RunID)
	snap.RepoDir = s.dir
	snap.Scripts = s.runScripts(ctx)
	if one := s.o.Single; one != nil && one.Shared != nil {
		one.Shared(snap)
	}
	return snap
}

// watchedFiles are the paths of file_created conditions, whose existence at
// the start of the run is recorded.
func watchedFiles(r stopconditions.Rules) []string {
	return stopconditions.FileCreatedPaths(r.Success, r.Failure, r.Conditions)
}
