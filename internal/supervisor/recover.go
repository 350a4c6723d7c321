package supervisor

import (
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/worker"
)

// RecoverCrash cleans up after a runr process that died while it held run
// st (its state says running, its lock was free). The caller holds the
// run's lock. The process group recorded in st.AgentProcess is stopped if
// that very process is still alive (pid and start time both match, so a
// recycled pid is never signalled); then the state is saved without it.
// The timeline records crash_detected and crash_recovered. It reports
// whether an orphaned process was stopped.
func (s *Supervisor) RecoverCrash(st *state.State) (bool, error) {
	tl, err := s.store.OpenTimeline(st.RunID)
	if err != nil {
		return false, err
	}
	defer tl.Close()
	detected := map[string]any{"milestone": st.MilestoneIndex + 1}
	if p := st.AgentProcess; p != nil {
		detected["pid"], detected["pgid"], detected["process_phase"], detected["argv0"] = p.PID, p.PGID, p.Phase, p.Argv0
	}
	tl.Append("crash_detected", st.Tick, st.Phase, detected)

	stopped := false
	if p := st.AgentProcess; p != nil {
		stopped, err = worker.StopRecorded(worker.Proc{PID: p.PID, PGID: p.PGID, StartTime: p.StartTime}, s.cfg.Agent.KillGrace)
		if err != nil {
			return stopped, stopreasons.Wrap(stopreasons.InternalError, err,
				"stop the agent process group left by the crashed runr of run %s", st.RunID)
		}
	}
	st.AgentProcess = nil
	if err := s.store.Save(st); err != nil {
		return stopped, err
	}
	tl.Append("crash_recovered", st.Tick, st.Phase, map[string]any{"stopped_process": stopped})
	return stopped, nil
}
