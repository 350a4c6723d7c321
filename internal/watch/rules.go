package watch

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
)

// maxConfig bounds the config.json the dashboard reads.
const maxConfig = 1 << 20

// recordedRules are the built-in stop rules a run started with, from its
// config.json (the resolved settings, in runr.yaml's shape); a key that is
// missing or not a number keeps its default. Custom conditions are not
// decoded: their progress is what the run recorded in state.json.
func recordedRules(runDir string) stopconditions.Rules {
	r := stopconditions.DefaultRules()
	f, err := os.Open(filepath.Join(runDir, "config.json"))
	if err != nil {
		return r
	}
	defer f.Close()
	var cfg struct {
		Stop map[string]any `json:"stop"`
	}
	if json.NewDecoder(io.LimitReader(f, maxConfig)).Decode(&cfg) != nil {
		return r
	}
	ints := map[string]*int{
		"max_milestone_retries":  &r.MaxMilestoneRetries,
		"max_consecutive_fails":  &r.MaxConsecutiveFails,
		"min_attempts_for_rates": &r.MinAttemptsForRates,
		"circuit_breaker":        &r.CircuitBreaker,
		"same_error":             &r.SameError,
		"noop":                   &r.Noop,
		"no_progress":            &r.NoProgress,
		"max_edge":               &r.MaxEdge,
		"max_review_rounds":      &r.MaxReviewRounds,
	}
	for k, p := range ints {
		if v, ok := cfg.Stop[k].(float64); ok && v >= 0 {
			*p = int(v)
		}
	}
	for k, p := range map[string]*float64{"max_retry_rate": &r.MaxRetryRate, "max_reject_rate": &r.MaxRejectRate} {
		if v, ok := cfg.Stop[k].(float64); ok && v >= 0 {
			*p = v
		}
	}
	if v, ok := cfg.Stop["on_milestone_failure"].(string); ok {
		r.OnMilestoneFailure = v
	}
	return r
}

// Rules is how close each stop rule of a live run is to firing now. The
// built-in rules and budgets are judged by the evaluator itself on the
// run's counters as state.json holds them, with the elapsed time of now:
// a run waiting on a long agent call still shows its time budget running
// out, and a run in its first tick, which has recorded no progress yet,
// shows its rules. The custom conditions are taken as the run recorded
// them after its last tick (they may read files or run scripts, which the
// dashboard does not).
func Rules(st *state.State, rules stopconditions.Rules, elapsed time.Duration) []Rule {
	rules.Success, rules.Failure, rules.Conditions = nil, nil, nil
	snap := &stopconditions.Snapshot{
		Tick:             st.Tick,
		Iteration:        st.Iteration,
		Checking:         st.Phase == state.PhaseVerify || st.Phase == state.PhaseReview || st.Phase == state.PhaseCheckpoint,
		Elapsed:          elapsed,
		CostUSD:          st.Usage.CostUSD,
		Tokens:           st.Usage.InputTokens + st.Usage.OutputTokens,
		Attempts:         st.Counters.Attempts,
		TotalMilestones:  len(st.Milestones),
		Attempted:        st.Statistics.Attempted,
		Approved:         st.Statistics.Approved,
		Rejected:         st.Statistics.Rejected,
		Failed:           st.Statistics.Failed,
		Milestone:        min(st.MilestoneIndex+1, len(st.Milestones)),
		LastFailureAgent: st.LastFailure != nil && st.LastFailure.Phase == state.PhaseImplement,
		ConsecutiveFails: st.Counters.ConsecutiveFails,
		SameError:        st.Counters.SameError,
		Noop:             st.Counters.Noop,
		NoProgress:       st.Counters.NoProgress,
		Edges:            st.Counters.Edges,
		TestFailStreak:   st.Counters.TestFailStreak,
	}
	for _, m := range st.Milestones {
		if m.JudgedAttempts() > 1 {
			snap.Retried++
		}
	}
	if st.MilestoneIndex < len(st.Milestones) {
		m := st.Milestones[st.MilestoneIndex]
		snap.MilestoneFailures = m.Retries
		snap.ReviewRounds = m.ReviewRounds
	}
	v := stopconditions.Evaluate(snap, rules, limitsOf(st.Budget))
	out := make([]Rule, 0, len(v.Progress)+len(st.Conditions))
	for _, p := range v.Progress {
		out = append(out, Rule{Name: p.Name, Progress: p.Progress, Message: p.Message})
	}
	for _, c := range st.Conditions {
		if strings.HasPrefix(c.Name, "stop.") {
			out = append(out, Rule{Name: c.Name, Progress: c.Progress, Message: c.Message})
		}
	}
	return out
}

func limitsOf(b state.Budget) stopconditions.Limits {
	return stopconditions.Limits{
		Time:          time.Duration(b.TimeMS) * time.Millisecond,
		MaxTicks:      b.MaxTicks,
		MaxIterations: b.MaxIterations,
		MaxCostUSD:    b.MaxCostUSD,
		MaxTokens:     b.MaxTokens,
	}
}

// closest is the rule closest to firing; the first in priority order among
// equals, and none when no rule has any progress.
func closest(rules []Rule) *Rule {
	var best *Rule
	for i := range rules {
		if rules[i].Progress > 0 && (best == nil || rules[i].Progress > best.Progress) {
			best = &rules[i]
		}
	}
	if best == nil {
		return nil
	}
	r := *best
	return &r
}
