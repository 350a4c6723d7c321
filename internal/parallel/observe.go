package parallel

import (
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
)

// observe tells the run's observer (telemetry) of an event of the
// coordinator's: the run's own start, resume, merges and stop, so that a
// parallel run is one run to the observer, as a sequential one is.
func (c *coordinator) observe(data state.EventData) {
	if c.o.Observer == nil {
		return
	}
	c.o.Observer.Observe(supervisor.Observation{RunID: c.st.RunID, Tick: c.st.Tick, Phase: c.st.Phase, Time: c.o.Now(), Event: data})
}

// workerObserver passes worker k's observations on to the run's observer
// under the run's id, tagged with k; nil when the run has no observer.
func (c *coordinator) workerObserver(k int) supervisor.Observer {
	if c.o.Observer == nil {
		return nil
	}
	return workerObserver{next: c.o.Observer, runID: c.st.RunID, worker: k}
}

// workerObserver tags a worker's observations. The worker's supervisor
// runs one milestone under a run id of its own; the observer knows the run
// by the id a user knows, and the worker by its number.
type workerObserver struct {
	next   supervisor.Observer
	runID  string
	worker int
}

func (w workerObserver) Observe(ob supervisor.Observation) {
	ob.RunID, ob.Worker = w.runID, w.worker
	w.next.Observe(ob)
}
