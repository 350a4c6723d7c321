package supervisor

import (
	"time"

	"github.com/runr-dev/runr/internal/report"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// StopRecord is a run's stop as it is recorded: the same fields, files and
// event for a sequential run and a parallel one.
type StopRecord struct {
	// Stop is the stop with the details it carries.
	Stop stopreasons.Stop
	// Resume is where a resume continues (milestone, 1-based, and phase);
	// a completed run is not resumed, and its phase is stopped.
	Resume state.ResumeFrom
	Now    time.Time
	// Event appends to the run's timeline, Save writes state.json.
	Event func(state.EventData)
	Save  func() error
}

// RecordStop records the stop of run st, in this order: state.json's
// fields (the statistics, the stop reason with its exit code and terminal
// status, the run status, where a resume continues), the stop event,
// state.json, then report.md and stop.json in runDir; a pending `runr
// stop` request is cleared. The first error is returned, after every step
// was tried: the stop files are written even when state.json could not
// be.
func RecordStop(store *state.Store, st *state.State, r StopRecord) error {
	now := r.Now.UTC()
	st.Statistics = st.Tally()
	reason := state.NewStopReason(r.Stop.Code, st.Statistics.Approved, r.Stop.Message)
	full := r.Stop
	if full.Details == nil {
		full.Details = &stopreasons.StopDetails{}
	}
	// Every view of the stop (state.json, stop.json, the summary, doctor,
	// --json) reads these details: bounded here, once.
	bounded := full.Details.Bounded()
	full.Details = &bounded
	reason.Stop = full
	st.StopReason = reason
	st.RunStatus = stopreasons.RunStatus(r.Stop.Code)
	st.StoppedAt = &now
	st.AgentProcess = nil
	st.Resumable = r.Stop.Code != stopreasons.Complete
	if st.Resumable {
		resume := r.Resume
		resume.Milestone = max(min(resume.Milestone, len(st.Milestones)), 0)
		st.ResumeFrom = &resume
		st.Phase = resume.Phase
	} else {
		st.ResumeFrom = nil
		st.Phase = state.PhaseStopped
	}
	r.Event(state.StopEvent{Code: string(r.Stop.Code), Condition: r.Stop.Condition, Message: r.Stop.Message, ExitCode: reason.ExitCode,
		TerminalStatus: reason.TerminalStatus, Milestones: len(st.Milestones), Approved: st.Statistics.Approved})
	err := r.Save()
	if werr := report.WriteStop(store.RunDir(st.RunID), st); werr != nil && err == nil {
		err = werr
	}
	store.ClearStopRequest(st.RunID)
	return err
}
