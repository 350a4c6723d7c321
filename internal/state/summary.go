package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Summary is a run as `runr status` lists it.
type Summary struct {
	RunID     string
	RunStatus string
	CreatedAt time.Time
	// UpdatedAt is when state.json was last saved: ElapsedMS counts up to
	// then (zero in a file that has no updated_at).
	UpdatedAt  time.Time
	ElapsedMS  int64
	Tick       int
	Approved   int
	Milestones int
	// Stop is the code of the stop reason; "" while the run has none.
	Stop stopreasons.Code
	// Usage is the run's usage: its totals, the agent of its latest call
	// and the per-model totals `runr report` sums up.
	Usage Usage
	// Scores are the scoreboard's figures of the run's milestones (Scores).
	Scores []Score
}

// summaryBuffer is how much of state.json one read takes: the fields
// Summary needs come first in the file (State's field order), within it.
const summaryBuffer = 4 << 10

// Summary reads the summary of run id from the head of its state.json,
// without decoding the rest: state.json lists the run's identity, status,
// times, statistics, stop reason and usage before its milestones and everything
// else, and the read ends as soon as it has them. A file in another order
// (written by an older runr, or by hand) is read until it has them, from
// the milestones themselves when they come before the statistics. What is
// state_corrupt for Load is state_corrupt here, as far as the fields read
// tell: a file Summary accepts may still hold a damaged field further on,
// which Load names.
func (s *Store) Summary(id string) (*Summary, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	path := s.StatePath(id)
	f, err := OpenRecord(path)
	if err == nil {
		defer f.Close()
	}
	if err != nil {
		if stopreasons.CodeOf(err) == stopreasons.StateCorrupt {
			return nil, err
		}
		return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err, "cannot read run state %s", path)
	}
	sum, err := readSummary(bufio.NewReaderSize(f, summaryBuffer), path)
	if err != nil {
		return nil, err
	}
	return sum, nil
}

// readSummary decodes the top-level fields of a state.json that Summary
// needs, in whatever order they come, and stops once it has them.
func readSummary(r io.Reader, path string) (*Summary, error) {
	sr := &summaryReader{path: path, seen: map[string]bool{}}
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil {
		return nil, sr.corrupt(err)
	} else if tok != json.Delim('{') {
		return nil, sr.corrupt(errors.New("not a JSON object"))
	}
	for dec.More() && !sr.complete() {
		tok, err := dec.Token()
		if err != nil {
			return nil, sr.corrupt(err)
		}
		key, _ := tok.(string)
		if err := sr.field(dec, key); err != nil {
			return nil, err
		}
	}
	if !sr.seen["scores"] && sr.milestones != nil {
		// A file without scores (an older runr's): from its milestones.
		sr.sum.Scores = Scores(&State{Usage: sr.sum.Usage, Milestones: sr.milestones})
	}
	if err := checkSummary(&sr.sum, path); err != nil {
		return nil, err
	}
	return &sr.sum, nil
}

// summaryReader holds what readSummary has read of one state.json so far.
type summaryReader struct {
	path                                    string
	sum                                     Summary
	seen                                    map[string]bool // the top-level keys read
	countsFromMilestones, countsFromSummary bool            // where the milestone counts came from
	milestones                              []Milestone     // read only from a file without scores
}

// corrupt is the state_corrupt error of a state.json that is not the JSON
// Summary reads.
func (sr *summaryReader) corrupt(err error) error {
	return stopreasons.Wrap(stopreasons.StateCorrupt, err,
		"run state %s is not valid JSON (left untouched); inspect or remove the run", sr.path)
}

// complete reports whether every field Summary needs has been read.
func (sr *summaryReader) complete() bool {
	for _, k := range []string{"schema_version", "run_id", "run_status", "created_at", "elapsed_ms", "tick", "usage", "scores"} {
		if !sr.seen[k] {
			return false
		}
	}
	if !sr.countsFromMilestones && !sr.countsFromSummary {
		return false
	}
	// The run's status says whether it has a stop reason to wait for: a
	// running run has none, and state.json then has no stop_reason field.
	return sr.seen["stop_reason"] || sr.sum.RunStatus == stopreasons.RunRunning
}

// field decodes the value of the top-level key next in dec into the
// summary, or skips it when Summary does not need it.
func (sr *summaryReader) field(dec *json.Decoder, key string) error {
	sum, path := &sr.sum, sr.path
	var derr error
	switch key {
	case "schema_version":
		var v int
		if derr = dec.Decode(&v); derr == nil && v > SchemaVersion {
			return newerSchema(path, v)
		}
	case "run_id":
		derr = dec.Decode(&sum.RunID)
	case "run_status":
		derr = dec.Decode(&sum.RunStatus)
	case "created_at":
		derr = dec.Decode(&sum.CreatedAt)
	case "updated_at":
		derr = dec.Decode(&sum.UpdatedAt)
	case "elapsed_ms":
		derr = dec.Decode(&sum.ElapsedMS)
	case "tick":
		derr = dec.Decode(&sum.Tick)
	case "statistics":
		var v struct {
			TotalMilestones int `json:"total_milestones"`
			Approved        int `json:"approved"`
		}
		if derr = dec.Decode(&v); derr == nil && !sr.countsFromMilestones {
			sum.Milestones, sum.Approved = v.TotalMilestones, v.Approved
			sr.countsFromSummary = true
		}
	case "milestones":
		// Before the statistics only in a file runr did not write in
		// State's order: the milestones themselves are the truth then.
		var ms []Milestone
		if derr = dec.Decode(&ms); derr == nil {
			sr.milestones = ms
			sum.Milestones, sum.Approved = len(ms), 0
			for _, m := range ms {
				if m.Status == MilestoneApproved {
					sum.Approved++
				}
			}
			sr.countsFromMilestones = true
		}
	case "usage":
		derr = dec.Decode(&sum.Usage)
		if derr == nil {
			if problem := sum.Usage.impossibleUsage(); problem != "" {
				return summaryImpossible(path, problem)
			}
		}
	case "scores":
		derr = dec.Decode(&sum.Scores)
		if derr == nil {
			if problem := impossibleScores(sum.Scores); problem != "" {
				return summaryImpossible(path, problem)
			}
		}
	case "stop_reason":
		var r *StopReason
		if derr = dec.Decode(&r); derr == nil && r != nil {
			sum.Stop = r.Code
		}
	default:
		var skip json.RawMessage
		derr = dec.Decode(&skip)
	}
	if derr != nil {
		return sr.corrupt(fmt.Errorf("field %q: %w", key, derr))
	}
	sr.seen[key] = true
	return nil
}

// checkSummary returns state_corrupt for a summary no runr writes: one
// without a run id, or with a value that cannot be.
func checkSummary(sum *Summary, path string) error {
	if sum.RunID == "" {
		return noRunID(path)
	}
	switch {
	case sum.Tick < 0:
		return summaryImpossible(path, fmt.Sprintf("tick %d is negative", sum.Tick))
	case sum.ElapsedMS < 0:
		return summaryImpossible(path, fmt.Sprintf("elapsed_ms %d is negative", sum.ElapsedMS))
	case sum.RunStatus != "" && !slices.Contains(runStatuses, sum.RunStatus):
		return summaryImpossible(path, fmt.Sprintf("run_status %q is not a run status (one of %v)", sum.RunStatus, runStatuses))
	}
	return nil
}

func summaryImpossible(path, problem string) error {
	return stopreasons.Errorf(stopreasons.StateCorrupt, "%s: %s (left untouched); inspect or remove the run", path, problem)
}

// Elapsed is the working time of a run at now: elapsedMS as its last save
// (at savedAt) recorded it and, while a runr process holds it, the time
// since that save. The holder counts from its own start (holderStart) at
// the earliest: time between a crash and the resume that holds the run now
// is no working time. A run no process holds has the time it recorded.
func Elapsed(elapsedMS int64, savedAt time.Time, live bool, holderStart, now time.Time) time.Duration {
	d := time.Duration(elapsedMS) * time.Millisecond
	if !live || savedAt.IsZero() {
		return d
	}
	from := savedAt
	if holderStart.After(from) {
		from = holderStart
	}
	if since := now.Sub(from); since > 0 {
		d += since
	}
	return d
}

// LiveStatus is the run status to show for a run whose state.json says
// status: that status, except that a run said to be running while no live
// process holds its lock is crashed.
func (s *Store) LiveStatus(id, status string) string {
	if status != stopreasons.RunRunning {
		return status
	}
	held, _, err := s.Locked(id)
	if err != nil || held {
		return status
	}
	return stopreasons.RunCrashed
}
