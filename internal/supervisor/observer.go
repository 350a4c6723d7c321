package supervisor

import (
	"time"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/state"
)

// Observer is told of a run as it goes, for telemetry: each timeline event
// as the supervisor records it, and the start of each tick. It is called on
// the supervisor's goroutine and must return at once; it changes nothing in
// the run. A nil Observer (Options.Observer) costs a run nothing.
type Observer interface {
	Observe(Observation)
}

// TickStarted is the Observation that opens a tick; it is not a timeline
// event (the timeline records a tick when it ends, as a TickEvent), and the
// timeline refuses it.
type TickStarted struct{}

// EventType names a TickStarted as the observer sees it.
func (TickStarted) EventType() string { return "tick_started" }

// Observation is one thing that happened in a run: a timeline event, as the
// timeline records it, or a TickStarted.
type Observation struct {
	RunID string
	// Worker is the parallel worker whose supervisor saw it (1-based); 0
	// for the run itself: a sequential run, or a parallel run's
	// coordinator. A worker's run is one milestone of the run: its own
	// start and stop are not the run's.
	Worker int
	Tick   int
	Phase  string
	Time   time.Time
	// Event is one of the timeline's event types (state.TickEvent,
	// state.StopEvent...) or TickStarted; the observer may read it, never
	// change it.
	Event state.EventData
}

// GenAIProvider is gen_ai.provider.name for the calls of an agent of kind,
// as its adapter says, for an Observer that names the provider of the
// agent an Observation names (the adapters are below it).
func GenAIProvider(kind string) string { return agents.GenAIProvider(kind) }
