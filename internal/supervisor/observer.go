package supervisor

import (
	"time"

	"github.com/runr-dev/runr/internal/agents"
)

// Observer is told of a run as it goes, for telemetry: each timeline event
// as the supervisor records it, and the start of each tick. It is called on
// the supervisor's goroutine and must return at once; it changes nothing in
// the run. A nil Observer (Options.Observer) costs a run nothing.
type Observer interface {
	Observe(Observation)
}

// TickStarted is the Observation that opens a tick; it is not a timeline
// event (the timeline records a tick when it ends, as "tick").
const TickStarted = "tick_started"

// Observation is one thing that happened in a run: a timeline event (its
// type and data as the timeline records them) or a TickStarted.
type Observation struct {
	RunID string
	Type  string
	Tick  int
	Phase string
	Time  time.Time
	// Data is the event's data; the observer may read it, never change it.
	Data map[string]any
}

// GenAIProvider is gen_ai.provider.name for the calls of an agent of kind,
// as its adapter says, for an Observer that names the provider of the
// agent an Observation names (the adapters are below it).
func GenAIProvider(kind string) string { return agents.GenAIProvider(kind) }
