package state

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// phases are the values state.json's phase and resume_from.phase may take.
var phases = []string{PhaseImplement, PhaseVerify, PhaseReview, PhaseCheckpoint, PhaseFinalize, PhaseStopped}

// runStatuses are the values run_status may take ("crashed" is only ever
// shown, never stored, but a file that says so is still understood).
var runStatuses = []string{stopreasons.RunRunning, stopreasons.RunCompleted, stopreasons.RunFailed,
	stopreasons.RunStopped, stopreasons.RunCrashed}

var milestoneStatuses = []string{MilestonePending, MilestoneInProgress, MilestoneApproved, MilestoneFailed, MilestoneRejected}

// impossible names the first field of st that no runr could have written
// (a milestone index past the milestones, a negative counter, an unknown
// phase), or returns "". Such a state would be shown or resumed as
// something it is not: a run on milestone 99 of 3 reported complete.
func (st *State) impossible() string {
	n := len(st.Milestones)
	// The index reaches len(milestones) once the last one is approved.
	if st.MilestoneIndex < 0 || st.MilestoneIndex > n {
		return fmt.Sprintf("milestone_index %d is beyond the %d milestones", st.MilestoneIndex, n)
	}
	if st.Phase != "" && !slices.Contains(phases, st.Phase) {
		return fmt.Sprintf("phase %q is not a phase (one of %v)", st.Phase, phases)
	}
	if st.RunStatus != "" && !slices.Contains(runStatuses, st.RunStatus) {
		return fmt.Sprintf("run_status %q is not a run status (one of %v)", st.RunStatus, runStatuses)
	}
	if r := st.ResumeFrom; r != nil {
		if r.Milestone < 1 || r.Milestone > max(n, 1) {
			return fmt.Sprintf("resume_from.milestone %d is outside the milestones 1..%d", r.Milestone, n)
		}
		if r.Phase != "" && !slices.Contains(phases, r.Phase) {
			return fmt.Sprintf("resume_from.phase %q is not a phase (one of %v)", r.Phase, phases)
		}
	}
	if why := st.parallelImpossible(); why != "" {
		return why
	}
	if why := st.badGitNames(); why != "" {
		return why
	}
	type count struct {
		name string
		v    int64
	}
	counts := []count{
		{"tick", int64(st.Tick)},
		{"iteration", int64(st.Iteration)},
		{"agent_index", int64(st.AgentIndex)},
		{"elapsed_ms", st.ElapsedMS},
		{"last_progress_tick", int64(st.LastProgressTick)},
		{"budget.time_ms", st.Budget.TimeMS},
		{"budget.max_ticks", int64(st.Budget.MaxTicks)},
		{"budget.max_iterations", int64(st.Budget.MaxIterations)},
		{"budget.max_tokens", st.Budget.MaxTokens},
	}
	// Every count of counters, whichever rule judges it, by its name in
	// state.json.
	cv := reflect.ValueOf(st.Counters)
	for i := range cv.NumField() {
		if f := cv.Field(i); f.Kind() == reflect.Int {
			name, _, _ := strings.Cut(cv.Type().Field(i).Tag.Get("json"), ",")
			counts = append(counts, count{"counters." + name, f.Int()})
		}
	}
	counts = append(counts, count{"usage.input_tokens", st.Usage.InputTokens}, count{"usage.output_tokens", st.Usage.OutputTokens},
		count{"auto_resume.count", int64(st.AutoResume.Count)})
	if p := st.AgentProcess; p != nil && p.Usage != nil {
		u := p.Usage
		counts = append(counts, count{"agent_process.usage.input_tokens", u.InputTokens}, count{"agent_process.usage.output_tokens", u.OutputTokens},
			count{"agent_process.usage.cache_read_tokens", u.CacheReadTokens}, count{"agent_process.usage.cache_write_tokens", u.CacheWriteTokens})
		if !(u.CostUSD >= 0) {
			return fmt.Sprintf("agent_process.usage.cost_usd %g is negative", u.CostUSD)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.Counters.Edges)) {
		counts = append(counts, count{"counters.edges." + k, int64(st.Counters.Edges[k])})
	}
	for i, m := range st.Milestones {
		if !slices.Contains(milestoneStatuses, m.Status) && m.Status != "" {
			return fmt.Sprintf("milestones[%d].status %q is not a milestone status (one of %v)", i, m.Status, milestoneStatuses)
		}
		counts = append(counts, count{fmt.Sprintf("milestones[%d].retries", i), int64(m.Retries)})
		if e := m.Earlier; e != nil {
			counts = append(counts, count{fmt.Sprintf("milestones[%d].earlier_attempts.count", i), int64(e.Count)})
		}
	}
	for _, c := range counts {
		if c.v < 0 {
			return fmt.Sprintf("%s %d is negative", c.name, c.v)
		}
	}
	if st.Budget.MaxCostUSD < 0 {
		return fmt.Sprintf("budget.max_cost_usd %g is negative", st.Budget.MaxCostUSD)
	}
	if st.Usage.CostUSD < 0 {
		return fmt.Sprintf("usage.cost_usd %g is negative", st.Usage.CostUSD)
	}
	return st.Usage.impossibleUsage()
}

// badGitNames names the first object or branch name of st that git could
// take for something else. These are handed to git as arguments: a
// guard_head of "--output=FILE" would make git write FILE. runr writes
// only full object ids (40 or 64 hex digits) and branch names of its own.
func (st *State) badGitNames() string {
	objects := []struct{ field, v string }{
		{"guard_head", st.GuardHead},
		{"fingerprint.git_head", st.Fingerprint.GitHead},
	}
	for i, m := range st.Milestones {
		objects = append(objects, struct{ field, v string }{fmt.Sprintf("milestones[%d].commit", i), m.Commit})
	}
	if st.Parallel != nil {
		objects = append(objects, struct{ field, v string }{"parallel.base", st.Parallel.Base})
	}
	for _, o := range objects {
		if o.v != "" && !ValidObjectName(o.v) {
			return fmt.Sprintf("%s %q is not a git object id", o.field, o.v)
		}
	}
	branches := []struct{ field, v string }{{"branch", st.Branch}}
	if st.Parallel != nil {
		branches = append(branches, struct{ field, v string }{"parallel.branch", st.Parallel.Branch})
	}
	for i, w := range st.Workers {
		branches = append(branches, struct{ field, v string }{fmt.Sprintf("workers[%d].branch", i), w.Branch})
	}
	for _, b := range branches {
		if b.v != "" && !validBranchName(b.v) {
			return fmt.Sprintf("%s %q is not a branch name runr writes", b.field, b.v)
		}
	}
	return ""
}

// ValidObjectName reports whether s is a full git object id: 40 (SHA-1)
// or 64 (SHA-256) lower-case hex digits, as git rev-parse prints them.
func ValidObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validBranchName reports whether s can be a branch name and never an
// option or a revision expression: no leading '-', none of the characters
// git refuses in a ref or reads as revision syntax, no "..", no "@{".
func validBranchName(s string) bool {
	if s == "" || len(s) > 255 || s[0] == '-' || s[0] == '/' || strings.HasSuffix(s, "/") ||
		strings.HasSuffix(s, ".lock") || strings.Contains(s, "..") || strings.Contains(s, "@{") || strings.Contains(s, "//") {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c == 0x7f || strings.IndexByte("~^:?*[\\", c) >= 0 {
			return false
		}
	}
	return true
}

// CheckRecordedPlaces returns state_corrupt when a working directory st
// records for its checkouts (worktree, parallel.integration,
// workers[].worktree) lies outside the store's worktree directory of the
// run (WorktreePath), where runr makes every one of them: a resume runs
// the agent and the verify commands there, so a path edited into
// state.json would run them in another directory.
func (s *Store) CheckRecordedPlaces(st *State) error {
	base := s.WorktreePath(st.RunID)
	places := []struct{ field, v string }{{"worktree", st.Worktree}}
	if st.Parallel != nil {
		places = append(places, struct{ field, v string }{"parallel.integration", st.Parallel.Integration})
	}
	for i, w := range st.Workers {
		places = append(places, struct{ field, v string }{fmt.Sprintf("workers[%d].worktree", i), w.Worktree})
	}
	for _, p := range places {
		if p.v == "" {
			continue
		}
		rel, err := filepath.Rel(base, p.v)
		if err != nil || !filepath.IsAbs(p.v) || !(rel == "." || filepath.IsLocal(rel)) {
			return stopreasons.Errorf(stopreasons.StateCorrupt,
				"%s: %s %q is not under %s, where runr makes the run's checkouts (left untouched); inspect or remove the run",
				s.StatePath(st.RunID), p.field, p.v, base)
		}
	}
	return nil
}
