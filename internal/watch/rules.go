package watch

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/rulestate"
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
	var cfg struct {
		Stop map[string]any `json:"stop"`
	}
	f, err := state.OpenRecord(filepath.Join(runDir, "config.json"))
	if err != nil {
		return stopconditions.DefaultRules()
	}
	defer f.Close()
	if json.NewDecoder(io.LimitReader(f, maxConfig)).Decode(&cfg) != nil {
		return stopconditions.DefaultRules()
	}
	return stopconditions.RulesFrom(cfg.Stop)
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
	snap := rulestate.Snapshot(st, elapsed)
	v := stopconditions.Evaluate(snap, rules, rulestate.Limits(st.Budget))
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

// LiveRules is Rules for the live run st whose directory is runDir, under
// the stop rules it started with.
func LiveRules(runDir string, st *state.State, elapsed time.Duration) []Rule {
	return Rules(st, recordedRules(runDir), elapsed)
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
