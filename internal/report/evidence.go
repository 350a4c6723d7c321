package report

import (
	"maps"
	"path/filepath"
	"slices"
	"sort"

	"github.com/runr-dev/runr/internal/state"
)

func milestoneRows(st *state.State) []MilestoneRow {
	rows := make([]MilestoneRow, 0, len(st.Milestones))
	for i, m := range st.Milestones {
		row := MilestoneRow{
			Number:   i + 1,
			Goal:     m.Goal,
			Status:   m.Status,
			Attempts: m.AttemptCount(),
			Outcomes: make([]string, 0, m.AttemptCount()),
			Edges:    m.Edges,
			Commit:   m.Commit,
		}
		// The attempts state.json no longer lists come first, by outcome:
		// it keeps their counts, not their order.
		if e := m.Earlier; e != nil {
			for _, o := range slices.Sorted(maps.Keys(e.Outcomes)) {
				for range e.Outcomes[o] {
					row.Outcomes = append(row.Outcomes, o)
				}
			}
			row.CostUSD += e.CostUSD
		}
		for _, a := range m.Attempts {
			row.Outcomes = append(row.Outcomes, a.Outcome)
			row.CostUSD += a.CostUSD
		}
		rows = append(rows, row)
	}
	return rows
}

// attemptEnds reads the timeline's attempt events: the tick each attempt
// ended in (its failure's tick: the verify or review that judged it), and
// the error signatures of the attempts state.json no longer lists, those
// of a milestone with Earlier attempts that ended before its first listed
// one. state.json keeps only the tick an attempt started in, so without
// the timeline the error signatures fall back to that one.
type attemptEnds struct {
	st    *state.State
	ended map[attemptKey]int
	hits  []signatureHit
}

// attemptKey names an attempt: its milestone (1-based) and the tick it
// started in.
type attemptKey struct{ milestone, tick int }

type signatureHit struct {
	signature string
	tick      int
}

func (e *attemptEnds) attempt(tick int, d state.AttemptEvent) {
	if d.Milestone < 1 || d.Milestone > len(e.st.Milestones) {
		return
	}
	// The event's tick is the one the attempt ended in; the attempt's own
	// (attempt_tick, 0 when an older runr left it out) is where it began.
	start := tick
	if d.AttemptTick > 0 {
		start = d.AttemptTick
		if e.ended == nil {
			e.ended = map[attemptKey]int{}
		}
		e.ended[attemptKey{d.Milestone, start}] = tick
	}
	m := e.st.Milestones[d.Milestone-1]
	if d.Signature == "" || m.Earlier == nil || len(m.Attempts) == 0 {
		return
	}
	// An attempt ends before the next one of its milestone starts: one
	// that ended before the first listed attempt started is not listed.
	if start < m.Attempts[0].Tick {
		e.hits = append(e.hits, signatureHit{d.Signature, tick})
	}
}

// signatureCounts counts the error signatures of the run's attempts, each
// at the tick its error came in (the attempt's end, as the last failure's
// tick is), or where the timeline does not tell, the tick it started in.
func signatureCounts(st *state.State, ends *attemptEnds) []SignatureCount {
	idx := map[string]int{}
	out := []SignatureCount{}
	count := func(sig string, tick int) {
		i, ok := idx[sig]
		if !ok {
			i = len(out)
			idx[sig] = i
			out = append(out, SignatureCount{Signature: sig, FirstTick: tick})
		}
		out[i].Count++
		out[i].FirstTick = min(out[i].FirstTick, tick)
		out[i].LastTick = max(out[i].LastTick, tick)
	}
	for _, h := range ends.hits {
		count(h.signature, h.tick)
	}
	for i, m := range st.Milestones {
		for _, a := range m.Attempts {
			if a.ErrorSignature != "" {
				tick := a.Tick
				if end, ok := ends.ended[attemptKey{i + 1, a.Tick}]; ok {
					tick = end
				}
				count(a.ErrorSignature, tick)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].LastTick > out[j].LastTick
	})
	return out
}

func gatherEvidence(st *state.State, runDir string, r *Report) Evidence {
	ends := &attemptEnds{st: st}
	sum, warns := scanTimeline(filepath.Join(runDir, timelineFile), ends.attempt)
	ev := Evidence{
		Signatures:    signatureCounts(st, ends),
		Counters:      st.Counters,
		Files:         []string{},
		Usage:         st.Usage,
		MaxCostUSD:    st.Budget.MaxCostUSD,
		MaxTokens:     st.Budget.MaxTokens,
		ElapsedMS:     st.ElapsedMS,
		BudgetTimeMS:  st.Budget.TimeMS,
		Tick:          st.Tick,
		MaxTicks:      st.Budget.MaxTicks,
		Iteration:     st.Iteration,
		MaxIterations: st.Budget.MaxIterations,
		Statistics:    st.Statistics,
		Agents:        st.AgentsUsed(),
		AgentSwitches: st.AgentSwitches,
	}
	if ev.Counters.Edges == nil {
		ev.Counters.Edges = map[string]int{}
	}
	if sr := st.StopReason; sr != nil {
		ev.Files = []string{}
		if d := sr.Details; d != nil {
			// A state.json of an older runr may list every file.
			b := d.Bounded()
			ev.Files = append(ev.Files, b.Files...)
			ev.FilesOmitted = b.FilesOmitted
			ev.ResetAt = d.ResetAt
			ev.Untested = d.Untested
		}
	}
	if f := st.LastFailure; f != nil {
		fe := &FailureEvidence{
			Tick: f.Tick, Phase: f.Phase, Command: f.Command, ExitCode: f.ExitCode,
			Signature: f.Signature, Log: f.Log, Tail: f.Tail, Notes: f.Notes,
		}
		// An untested verify passed: its own words are the evidence, not
		// the end of its passing output.
		if f.Log != "" && f.Untested == nil {
			tail, err := logTail(runDir, f.Log)
			if err != nil {
				r.Warnings = append(r.Warnings, err.Error())
			} else if tail != "" {
				fe.Tail = tail
			}
		}
		ev.LastFailure = fe
	}
	ev.Timeline = sum
	r.Warnings = append(r.Warnings, warns...)
	return ev
}
