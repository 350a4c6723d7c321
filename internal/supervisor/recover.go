package supervisor

import (
	"os"
	"strconv"
	"time"

	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
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
	detected := state.CrashDetectedEvent{Milestone: st.MilestoneIndex + 1}
	if p := st.AgentProcess; p != nil {
		detected.CrashedProcess = &state.CrashedProcess{PID: p.PID, PGID: p.PGID, Phase: p.Phase, Argv0: p.Argv0}
	}
	tl.Append(st.Tick, st.Phase, detected)

	stopped := false
	var recovered state.CrashRecoveredEvent
	// The spend of the call in flight counts, as far as state.json knew
	// it, before its group is stopped.
	if call, ok := recoverCallUsage(st, s.recoveredAgent(st)); ok {
		ev := state.AgentCallEvent{Call: call, Interrupted: true}
		recovered.CallUsageAdded = &ev
		tl.Append(st.Tick, st.Phase, ev)
	}
	if p := st.AgentProcess; p != nil {
		stopped, err = proc.StopRecorded(proc.Proc{PID: p.PID, PGID: p.PGID, StartTime: p.StartTime}, s.cfg.Agent.KillGrace, s.processTags(st)...)
		if err != nil {
			return stopped, stopreasons.Wrap(stopreasons.InternalError, err,
				"stop the agent process group left by the crashed runr of run %s", st.RunID)
		}
		if lost := s.lostCallTime(st, p, stopped); lost > 0 {
			st.ElapsedMS += lost.Milliseconds()
			recovered.ElapsedAddedMS = lost.Milliseconds()
		}
	}
	// What the group stop missed: the rest of a group whose leader had
	// exited, a process that left its group, one started but not recorded.
	left, err := proc.StopTagged(s.cfg.Agent.KillGrace, s.processTags(st)...)
	if err != nil {
		return stopped, stopreasons.Wrap(stopreasons.InternalError, err, "stop the processes left by the crashed runr of run %s", st.RunID)
	}
	if len(left) > 0 {
		stopped = true
		recovered.TaggedPIDs = left
	}
	recovered.StoppedProcess = stopped
	st.AgentProcess = nil
	if err := s.store.Save(st); err != nil {
		return stopped, err
	}
	tl.Append(st.Tick, st.Phase, recovered)
	return stopped, nil
}

// lostCallTime is the part of the run's elapsed time that the crash kept
// out of state.json: the call in flight, from its recorded start to its
// end. A call still running at recovery (just stopped) ended now; else it
// ended when it last wrote to its log, as far as anything tells.
func (s *Supervisor) lostCallTime(st *state.State, p *state.Process, stillRunning bool) time.Duration {
	if p.StartedAt.IsZero() {
		return 0
	}
	end := p.StartedAt
	if stillRunning {
		end = s.o.Now()
	} else if fi, err := os.Stat(s.store.LogPath(st.RunID, st.Tick, p.Phase)); err == nil && fi.ModTime().After(end) {
		end = fi.ModTime()
	}
	return max(end.Sub(p.StartedAt), 0)
}

// processTags are the variables that mark each process of the run in its
// environment (childEnv): its RUNR_RUN_ID, and in a parallel run's worker,
// the parallel run's id and RUNR_WORKER, so that one worker's leftovers
// are told from another's.
func (s *Supervisor) processTags(st *state.State) []string {
	if one := s.o.Single; one != nil && one.RunID != "" {
		return []string{"RUNR_RUN_ID=" + one.RunID, "RUNR_WORKER=" + strconv.Itoa(one.Worker)}
	}
	return []string{"RUNR_RUN_ID=" + st.RunID}
}

// stopLeftovers stops every process still carrying the run's tags (one
// that left its group, or outlived its call) before a resume starts new
// ones, and records them in the timeline.
func (s *Supervisor) stopLeftovers() error {
	left, err := proc.StopTagged(s.cfg.Agent.KillGrace, s.processTags(s.st)...)
	if len(left) > 0 {
		s.event(state.LeftoversStoppedEvent{PIDs: left})
	}
	if err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "stop the processes left by run %s", s.st.RunID)
	}
	return nil
}

// recoveredAgent is the kind of agent that made the call a crash cut
// short: the agent the run was calling (agent.kind, or the fallback it had
// switched to).
func (s *Supervisor) recoveredAgent(st *state.State) string {
	if s.cfg == nil {
		return st.Usage.Agent
	}
	return agentSettings(s.cfg.Agent, st.AgentIndex).Kind
}
