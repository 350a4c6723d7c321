package supervisor

import (
	"time"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/state"
)

// elapsed is the run's elapsed time over every invocation.
func (s *Supervisor) elapsed() time.Duration {
	return time.Duration(s.baseMS)*time.Millisecond + s.o.Now().Sub(s.started)
}

// event records an event of the run at its current tick and phase. It
// reaches the timeline with the next write of state.json, after it: the
// timeline never tells of an attempt, an approval or a commit that
// state.json does not hold (DESIGN §2: persist, then timeline).
func (s *Supervisor) event(data state.EventData) {
	s.pending = append(s.pending, pendingEvent{tick: s.st.Tick, phase: s.st.Phase, data: data})
	s.observe(data)
}

func (s *Supervisor) observe(data state.EventData) {
	if s.o.Observer != nil {
		s.o.Observer.Observe(Observation{RunID: s.st.RunID, Tick: s.st.Tick, Phase: s.st.Phase, Time: s.o.Now(), Event: data})
	}
}

type pendingEvent struct {
	tick  int
	phase string
	data  state.EventData
}

// flushEvents appends the recorded events to the timeline.
func (s *Supervisor) flushEvents() {
	events := s.pending
	s.pending = nil
	if s.tl == nil {
		return
	}
	for _, e := range events {
		if err := s.tl.Append(e.tick, e.phase, e.data); err != nil && s.log != nil {
			s.log.Warn("timeline append failed", zap.Error(err))
		}
	}
}

// save writes state.json durably, then the events it now holds to the
// timeline.
func (s *Supervisor) save() error { return s.persist(s.store.Save) }

// saveProcessStart is save for the record of a process being started
// (state.Store.SaveProcessStart): the tick's closing save makes it durable.
func (s *Supervisor) saveProcessStart() error { return s.persist(s.store.SaveProcessStart) }

func (s *Supervisor) persist(write func(*state.State) error) error {
	s.st.ElapsedMS = s.elapsed().Milliseconds()
	if s.started.IsZero() {
		s.st.ElapsedMS = s.baseMS
	}
	if err := write(s.st); err != nil {
		return err
	}
	s.flushEvents()
	return nil
}
