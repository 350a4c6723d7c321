// Package resume plans the continuation of a stopped or crashed run, runs
// it, and holds the auto-resume policy and its wait (DESIGN §7). It promises
// that a run is only continued by the process that holds its lock, kept
// through every wait and continuation; that a state.json it cannot read is
// never touched; that budgets are cumulative over every invocation (a resume
// grants more, it never starts afresh); and that what a resume resets is
// exactly the current milestone's retries and the streak counters.
package resume

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/rulestate"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Grant is the budget a resume adds on top of what the run has used: the
// flags --time, --max-ticks, --max-iterations and --max-cost. Zero grants
// nothing of that kind.
type Grant struct {
	Time          time.Duration
	MaxTicks      int
	MaxIterations int
	MaxCostUSD    float64
}

// Request is what a person asked of `runr resume`.
type Request struct {
	Ref   string // a run id or "latest"
	Grant Grant
	// AllowDeps and ForceParallel are added to the run's flags.
	AllowDeps, ForceParallel bool
	// Force continues even though the config changed since the run started.
	Force bool
	// DryRun (--plan) takes no lock and changes nothing.
	DryRun bool
	// Total makes Grant the run's total budget rather than more on top
	// (`runr run --run-id` again): a limit given is the limit, and a run
	// that has used it up is refused with ErrSpent.
	Total bool
	// Config says where the current settings come from: runr.yaml (or
	// --config) and RUNR_* variables.
	Config config.LoadOptions
	// RunrVersion and GitHead describe the environment now, to warn when it
	// differs from the run's fingerprint; "" skips that comparison.
	RunrVersion, GitHead string
}

// Plan is a resume ready to go: the state to hand to the supervisor's
// Continue, the settings to run with, and what the resume will do.
type Plan struct {
	RunID string
	State *state.State
	// Config is the run's recorded config with the current runr.yaml and
	// RUNR_* values on top (see LoadConfig).
	Config *config.Config
	// Lock is the run's lock, held for the caller (nil for a dry run or a
	// completed run); hand it to the supervisor, or release it.
	Lock *state.Lock
	// Completed says the run already completed: there is nothing to resume.
	Completed bool
	// Crashed says the run's state says running while no process held it:
	// recover it (stop its recorded agent group) before continuing.
	Crashed bool
	From    state.ResumeFrom
	// Remaining is the budget left after the grant.
	Remaining Remaining
	// Granted describes each grant, e.g. "--time 5m: time budget 10m → 15m".
	Granted []string
	// Resets describes what the resume resets, e.g. "same_error 3 → 0".
	Resets []string
	// ChangedKeys are the config keys whose value differs from the run's
	// recorded config (only with Force, or in a dry run).
	ChangedKeys []string
	// Warnings are for stderr: a changed git HEAD or runr version.
	Warnings []string
}

// Remaining is the budget a resumed run may still use; a nil limit is off.
type Remaining struct {
	Time       *time.Duration
	Ticks      *int
	Iterations *int
	CostUSD    *float64
	Tokens     *int64
}

// Release gives up the plan's lock, when the caller does not go on.
func (p *Plan) Release() {
	if p != nil && p.Lock != nil {
		p.Lock.Release()
		p.Lock = nil
	}
}

// Open loads the run named by req.Ref and plans its resume. Unless
// req.DryRun it takes the run's lock first (run_locked when a live process
// holds it) and reads state.json under that lock, so no other runr can
// start on the run in between; on error the lock is released. A completed
// run gives a plan with Completed set and no lock.
func Open(store *state.Store, req Request) (*Plan, error) {
	id, err := store.Resolve(req.Ref)
	if err != nil {
		return nil, err
	}
	st, err := store.Load(id)
	if err != nil {
		return nil, err
	}
	if st.RunStatus == stopreasons.RunCompleted {
		// Nothing to resume; taking the lock, when it is free, removes what
		// a runr killed while writing the run's last files left behind.
		if !req.DryRun {
			if l, err := store.Acquire(id); err == nil {
				l.Release()
			}
		}
		return &Plan{RunID: id, State: st, Completed: true}, nil
	}
	var lock *state.Lock
	if req.DryRun {
		if live, info, err := store.Locked(id); err != nil {
			return nil, err
		} else if live {
			return nil, stopreasons.Errorf(stopreasons.RunLocked,
				"run %s is live (runr process %d): it cannot be resumed while it runs; wait for it or stop it with `runr stop %s`", id, info.PID, id)
		}
	} else {
		if lock, err = store.Acquire(id); err != nil {
			return nil, err
		}
		// Read again under the lock: the holder that just let go may
		// have written its final state after the first read.
		if st, err = store.Load(id); err != nil {
			lock.Release()
			return nil, err
		}
		if st.RunStatus == stopreasons.RunCompleted {
			lock.Release()
			return &Plan{RunID: id, State: st, Completed: true}, nil
		}
	}
	plan, err := planWith(store, st, req)
	if err != nil {
		if lock != nil {
			lock.Release()
		}
		return nil, err
	}
	if lock != nil && len(plan.ChangedKeys) > 0 {
		// --force: the run goes on with the new settings, so they become
		// its record, and the next resume compares against them.
		if err := store.WriteJSON(id, "config.json", plan.Config.Raw); err != nil {
			lock.Release()
			return nil, err
		}
	}
	plan.Lock = lock
	return plan, nil
}

func planWith(store *state.Store, st *state.State, req Request) (*Plan, error) {
	// No process holds the run now (we hold its lock, or a dry run found it
	// free), so a state that says running was left by a runr that died.
	crashed := st.RunStatus == stopreasons.RunRunning
	if err := store.CheckRecordedPlaces(st); err != nil {
		return nil, err
	}
	recorded, err := RecordedConfig(store.RunDir(st.RunID))
	if err != nil {
		return nil, err
	}
	if err := checkRecordedConfig(store, st, recorded); err != nil {
		return nil, err
	}
	cfg, changed, err := LoadConfig(recorded, st.Flags.Settings, req.Config)
	if err != nil {
		return nil, err
	}
	if recorded == nil && st.Fingerprint.ConfigHash != "" && cfg.Hash() != st.Fingerprint.ConfigHash {
		changed = []string{"(the run's config.json is missing; the settings differ from the run's config hash)"}
	}
	if len(changed) > 0 && !req.Force && !req.DryRun {
		return nil, stopreasons.Errorf(stopreasons.UsageError,
			"the config changed since run %s started (%s); restore the old settings, or continue with the new ones: runr resume %s --force",
			st.RunID, strings.Join(changed, ", "), st.RunID)
	}
	plan, err := Prepare(st, cfg, req, crashed)
	if err != nil {
		return nil, err
	}
	plan.ChangedKeys = changed
	if len(changed) > 0 {
		st.Fingerprint.ConfigHash = cfg.Hash()
	}
	return plan, nil
}

// Prepare plans the resume of st with cfg and changes st accordingly: it
// grants the requested budget, adds the requested flags, resets the current
// milestone's retries and the streak counters, and sets resume_from. A run
// with a budget used up and nothing granted of it is refused with
// usage_error, naming the flag to add. crashed marks a run whose runr died:
// it continues at its current milestone and phase.
func Prepare(st *state.State, cfg *config.Config, req Request, crashed bool) (*Plan, error) {
	if len(st.Milestones) == 0 {
		return nil, stopreasons.Errorf(stopreasons.StateCorrupt, "run %s has no milestones in its state.json; it cannot be resumed", st.RunID)
	}
	p := &Plan{RunID: st.RunID, State: st, Config: cfg, Crashed: crashed}
	g := req.Grant
	if req.Total {
		g = setTotals(st, g, p)
	}
	if err := grant(st, cfg, g, p); err != nil {
		return nil, err
	}
	if req.AllowDeps && !st.Flags.AllowDeps {
		st.Flags.AllowDeps = true
		p.Granted = append(p.Granted, "--allow-deps: lockfile changes allowed")
	}
	if req.ForceParallel && !st.Flags.ForceParallel {
		st.Flags.ForceParallel = true
		p.Granted = append(p.Granted, "--force-parallel: overlapping live runs allowed")
	}

	from := resumeFrom(st, crashed)
	st.ResumeFrom = &from
	p.From = from
	if crashed {
		closeCrashedAttempts(st, from)
	}
	p.Resets = rulestate.Reset(st, from.Milestone-1)
	p.Remaining = remaining(st)
	p.Warnings = fingerprintWarnings(st, req)
	return p, nil
}

// closeCrashedAttempts gives the attempts the dead runr left without an
// outcome the one a signal would have given them. An agent call cut short
// counts as stopped. An attempt whose call had finished and was being
// verified or reviewed stays open: the resume judges it again in that phase,
// as it does after a signal there, so its outcome still counts.
func closeCrashedAttempts(st *state.State, from state.ResumeFrom) {
	judging := from.Phase == state.PhaseVerify || from.Phase == state.PhaseReview
	for i := range st.Milestones {
		attempts := st.Milestones[i].Attempts
		for j := range attempts {
			if attempts[j].Outcome != "" || judging && i == from.Milestone-1 && j == len(attempts)-1 {
				continue
			}
			attempts[j].Outcome = state.OutcomeStopped
		}
	}
}

// resumeFrom is where the run continues: the stop recorded it; a crashed
// run continues at the milestone and phase it was in.
func resumeFrom(st *state.State, crashed bool) state.ResumeFrom {
	var from state.ResumeFrom
	if st.ResumeFrom != nil && !crashed {
		from = *st.ResumeFrom
	} else {
		from = state.ResumeFrom{Milestone: st.MilestoneIndex + 1, Phase: st.Phase}
	}
	switch {
	case from.Milestone > len(st.Milestones):
		from = state.ResumeFrom{Milestone: len(st.Milestones), Phase: state.PhaseFinalize}
	case from.Milestone < 1:
		from.Milestone = 1
	}
	switch from.Phase {
	case state.PhaseImplement, state.PhaseVerify, state.PhaseReview, state.PhaseCheckpoint, state.PhaseFinalize:
	default:
		from.Phase = state.PhaseImplement
	}
	return from
}

// grant adds the requested budget, and refuses when a budget is used up
// and nothing of it was granted. A grant gives that much more from where
// the run stands, so a run that overshot its time still gets the full grant.
func grant(st *state.State, cfg *config.Config, g Grant, p *Plan) error {
	b := &st.Budget
	id := st.RunID
	if g.Time > 0 {
		before := b.TimeMS
		b.TimeMS = max(b.TimeMS, st.ElapsedMS) + g.Time.Milliseconds()
		p.Granted = append(p.Granted, fmt.Sprintf("--time %s: time budget %s → %s", short(g.Time), msText(before), msText(b.TimeMS)))
	} else if b.TimeMS > 0 && st.ElapsedMS >= b.TimeMS {
		return spent(id, fmt.Sprintf("the time budget is used up (%s of %s)", msText(st.ElapsedMS), msText(b.TimeMS)),
			"--time "+short(orDefault(cfg.Budget.Time, 30*time.Minute)))
	}
	if g.MaxTicks > 0 {
		before := b.MaxTicks
		b.MaxTicks = max(b.MaxTicks, st.Tick) + g.MaxTicks
		p.Granted = append(p.Granted, fmt.Sprintf("--max-ticks %d: max_ticks %d → %d", g.MaxTicks, before, b.MaxTicks))
	} else if b.MaxTicks > 0 && st.Tick >= b.MaxTicks {
		return spent(id, fmt.Sprintf("the tick budget is used up (%d of %d ticks)", st.Tick, b.MaxTicks),
			"--max-ticks "+strconv.Itoa(orDefault(cfg.Budget.MaxTicks, b.MaxTicks)))
	}
	if g.MaxIterations > 0 {
		before := b.MaxIterations
		b.MaxIterations = max(b.MaxIterations, st.Iteration) + g.MaxIterations
		p.Granted = append(p.Granted, fmt.Sprintf("--max-iterations %d: max_iterations %d → %d", g.MaxIterations, before, b.MaxIterations))
	} else if b.MaxIterations > 0 && st.Iteration >= b.MaxIterations {
		return spent(id, fmt.Sprintf("the iteration budget is used up (%d of %d agent calls)", st.Iteration, b.MaxIterations),
			"--max-iterations "+strconv.Itoa(orDefault(cfg.Budget.MaxIterations, b.MaxIterations)))
	}
	if g.MaxCostUSD > 0 {
		before := b.MaxCostUSD
		b.MaxCostUSD = math.Max(b.MaxCostUSD, st.Usage.CostUSD) + g.MaxCostUSD
		p.Granted = append(p.Granted, fmt.Sprintf("--max-cost %s: max_cost_usd $%.2f → $%.2f", money(g.MaxCostUSD), before, b.MaxCostUSD))
	} else if b.MaxCostUSD > 0 && st.Usage.CostUSD >= b.MaxCostUSD {
		return spent(id, fmt.Sprintf("the cost budget is used up ($%.2f of $%.2f)", st.Usage.CostUSD, b.MaxCostUSD),
			"--max-cost "+money(orDefault(cfg.Budget.MaxCostUSD, b.MaxCostUSD)))
	}
	// Tokens have no flag: a larger budget.max_tokens in runr.yaml raises it
	// (budget.* does not count as a config change).
	if cfg.Budget.MaxTokens > b.MaxTokens {
		p.Granted = append(p.Granted, fmt.Sprintf("budget.max_tokens %d → %d", b.MaxTokens, cfg.Budget.MaxTokens))
		b.MaxTokens = cfg.Budget.MaxTokens
	}
	if used := st.Usage.InputTokens + st.Usage.OutputTokens; b.MaxTokens > 0 && used >= b.MaxTokens {
		return spentError{stopreasons.Errorf(stopreasons.UsageError,
			"run %s cannot continue: the token budget is used up (%d of %d tokens); there is no flag for tokens: raise budget.max_tokens in runr.yaml, then run `runr resume %s`",
			id, used, b.MaxTokens, id)}
	}
	return nil
}

// ErrSpent is what a resume's error wraps when a budget of the run is used
// up and nothing of it was granted.
var ErrSpent = errors.New("budget used up")

// spentError is a usage_error that errors.Is finds ErrSpent in.
type spentError struct{ error }

func (e spentError) Unwrap() error        { return e.error }
func (e spentError) Is(target error) bool { return target == ErrSpent }

func spent(id, what, flag string) error {
	return spentError{stopreasons.Errorf(stopreasons.UsageError,
		"run %s cannot continue: %s; grant more with: runr resume %s %s", id, what, id, flag)}
}

// setTotals makes the limits given in g the run's budget (Request.Total)
// and returns an empty grant: the usual checks then refuse a budget that
// is used up.
func setTotals(st *state.State, g Grant, p *Plan) Grant {
	b := &st.Budget
	set := func(name string, before, after string, changed bool) {
		if changed {
			p.Granted = append(p.Granted, fmt.Sprintf("%s: %s → %s", name, before, after))
		}
	}
	if g.Time > 0 {
		ms := g.Time.Milliseconds()
		set("--time", msText(b.TimeMS), msText(ms), b.TimeMS != ms)
		b.TimeMS = ms
	}
	if g.MaxTicks > 0 {
		set("--max-ticks", strconv.Itoa(b.MaxTicks), strconv.Itoa(g.MaxTicks), b.MaxTicks != g.MaxTicks)
		b.MaxTicks = g.MaxTicks
	}
	if g.MaxIterations > 0 {
		set("--max-iterations", strconv.Itoa(b.MaxIterations), strconv.Itoa(g.MaxIterations), b.MaxIterations != g.MaxIterations)
		b.MaxIterations = g.MaxIterations
	}
	if g.MaxCostUSD > 0 {
		set("--max-cost", fmt.Sprintf("$%.2f", b.MaxCostUSD), fmt.Sprintf("$%.2f", g.MaxCostUSD), b.MaxCostUSD != g.MaxCostUSD)
		b.MaxCostUSD = g.MaxCostUSD
	}
	return Grant{}
}

func orDefault[T int | float64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func remaining(st *state.State) Remaining {
	var r Remaining
	b := st.Budget
	if b.TimeMS > 0 {
		d := time.Duration(max(b.TimeMS-st.ElapsedMS, 0)) * time.Millisecond
		r.Time = &d
	}
	if b.MaxTicks > 0 {
		n := max(b.MaxTicks-st.Tick, 0)
		r.Ticks = &n
	}
	if b.MaxIterations > 0 {
		n := max(b.MaxIterations-st.Iteration, 0)
		r.Iterations = &n
	}
	if b.MaxCostUSD > 0 {
		c := math.Max(b.MaxCostUSD-st.Usage.CostUSD, 0)
		r.CostUSD = &c
	}
	if b.MaxTokens > 0 {
		n := max(b.MaxTokens-st.Usage.InputTokens-st.Usage.OutputTokens, 0)
		r.Tokens = &n
	}
	return r
}

// fingerprintWarnings compares the environment now with the one the run
// started in. HEAD moved by the run's own checkpoint commits is expected.
func fingerprintWarnings(st *state.State, req Request) []string {
	var out []string
	fp := st.Fingerprint
	if req.GitHead != "" && fp.GitHead != "" && req.GitHead != fp.GitHead {
		own := slices.ContainsFunc(st.Milestones, func(m state.Milestone) bool { return m.Commit == req.GitHead })
		if !own {
			out = append(out, fmt.Sprintf("git HEAD moved since run %s started (%s → %s): the agent continues on the new HEAD", st.RunID, abbrev(fp.GitHead), abbrev(req.GitHead)))
		}
	}
	if req.RunrVersion != "" && fp.RunrVersion != "" && req.RunrVersion != fp.RunrVersion {
		out = append(out, fmt.Sprintf("run %s was started by runr %s; this is runr %s", st.RunID, fp.RunrVersion, req.RunrVersion))
	}
	return out
}

func abbrev(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// short writes a duration as a person types it: 30m, 1h30m, 90s.
func short(d time.Duration) string { return stopreasons.TrimDuration(d) }

func msText(ms int64) string {
	return stopreasons.Duration(time.Duration(ms) * time.Millisecond)
}

func money(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// checkRecordedConfig compares config.json with the config hash state.json
// recorded: config.json holds the verify commands and the agent's argv a
// resume runs, so one that is not what the run started with (planted or
// damaged) is state_corrupt, never acted on. A run without a recorded hash
// (an older runr's) has nothing to compare with.
func checkRecordedConfig(store *state.Store, st *state.State, recorded map[string]any) error {
	if recorded == nil || st.Fingerprint.ConfigHash == "" {
		return nil
	}
	if got := config.HashRaw(recorded); got != st.Fingerprint.ConfigHash {
		path := filepath.Join(store.RunDir(st.RunID), "config.json")
		return stopreasons.Errorf(stopreasons.StateCorrupt,
			"%s is not the config run %s recorded (sha256 %s in state.json's fingerprint.config_hash, %s found); runr does not run its settings: restore it or remove the run",
			path, st.RunID, st.Fingerprint.ConfigHash, got)
	}
	return nil
}
