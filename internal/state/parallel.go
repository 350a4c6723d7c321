package state

import (
	"fmt"
	"slices"
)

// MaxWorkers bounds the worker slots a state.json may hold: parallel.workers
// larger than this is refused before a run starts.
const MaxWorkers = 64

// WorkerSlot is one worker of a parallel run (DESIGN §11): the milestone it
// works on now, where, and the process group of its current call. A slot
// without a milestone is an idle worker.
type WorkerSlot struct {
	Worker    int    `json:"worker"`              // 1-based
	Milestone int    `json:"milestone,omitempty"` // 1-based; 0 idle
	Worktree  string `json:"worktree,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Phase     string `json:"phase,omitempty"`
	// RunID is the worker's own record of the milestone's attempt, under
	// the run's directory (workers/w<k>/runs/<run-id>): its state.json and
	// timeline.
	RunID        string   `json:"run_id,omitempty"`
	AgentProcess *Process `json:"agent_process,omitempty"`
	StartedAt    string   `json:"started_at,omitempty"` // RFC 3339, when the milestone started here
	Requeues     int      `json:"requeues,omitempty"`   // of this milestone so far
}

// Parallel is what a parallel run records besides its slots: the base the
// integration branch started from, its worktree and branch, the merge queue
// (approved milestones waiting to merge, oldest approval first) and the
// requeues of each milestone.
type Parallel struct {
	Workers     int    `json:"workers"`
	Base        string `json:"base"` // the checkout's HEAD when the run started
	Integration string `json:"integration,omitempty"`
	Branch      string `json:"branch,omitempty"`
	MergeQueue  []int  `json:"merge_queue,omitempty"` // milestones, 1-based
	// Requeues counts, per milestone (index 0 is milestone 1), the times it
	// went back to a worker after a failed merge.
	Requeues []int `json:"requeues,omitempty"`
}

// parallelImpossible names what no runr writes in a parallel run's fields.
func (st *State) parallelImpossible() string {
	n := len(st.Milestones)
	if len(st.Workers) > MaxWorkers {
		return fmt.Sprintf("workers holds %d slots, more than %d", len(st.Workers), MaxWorkers)
	}
	p := st.Parallel
	if p == nil {
		if len(st.Workers) > 0 {
			return "workers without parallel"
		}
		return ""
	}
	if p.Workers < 1 || p.Workers > MaxWorkers || len(st.Workers) > p.Workers {
		return fmt.Sprintf("parallel.workers %d does not hold the %d slots", p.Workers, len(st.Workers))
	}
	if len(p.MergeQueue) > p.Workers || len(p.Requeues) > n {
		return fmt.Sprintf("merge_queue of %d or requeues of %d beyond %d workers and %d milestones", len(p.MergeQueue), len(p.Requeues), p.Workers, n)
	}
	for _, m := range p.MergeQueue {
		if m < 1 || m > n {
			return fmt.Sprintf("merge_queue names milestone %d of %d", m, n)
		}
	}
	if len(p.MergeQueue) != len(slices.Compact(slices.Sorted(slices.Values(p.MergeQueue)))) {
		return "merge_queue names a milestone twice"
	}
	for _, r := range p.Requeues {
		if r < 0 {
			return "parallel.requeues holds a negative count"
		}
	}
	for i, w := range st.Workers {
		if w.Worker != i+1 {
			return fmt.Sprintf("workers[%d] is worker %d", i, w.Worker)
		}
		if w.Milestone < 0 || w.Milestone > n {
			return fmt.Sprintf("workers[%d].milestone %d of %d", i, w.Milestone, n)
		}
	}
	return ""
}
