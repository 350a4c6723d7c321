package supervisor

import (
	"encoding/json"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/state"
)

// saveUsageEvery is how often, at most, the usage of a call in flight is
// written to state.json (in agent_process.usage): never once per line.
const saveUsageEvery = time.Second

// callCost is what usage u of an agent call cost and where the figure came
// from: the CLI's own, else an estimate at agent.price or runr's table.
func (s *Supervisor) callCost(u agents.Usage) (float64, agents.CostSource) {
	p := s.cfg.Agent.Price
	return agents.CallCost(agents.Billable(s.cfg.Agent.Kind, u), agents.PriceOf(p.InputPerMTok, p.OutputPerMTok), s.cfg.Agent.Model)
}

// spendWatch follows the spend of one agent call while it streams: after
// each stdout line it adds the call's usage so far to the run's usage
// before the call, and stops the call when budget.max_cost_usd or
// budget.max_tokens is reached. It runs on the goroutine that reads the
// call's stdout, while the supervisor waits for the call; it writes the
// usage so far into state.json's agent_process at most once a second, and
// a change that came sooner is written by a timer when the second is over,
// so a call that falls silent after it still leaves it on disk.
type spendWatch struct {
	s          *Supervisor
	parser     agents.Parser
	baseCost   float64
	baseTokens int64
	maxCost    float64
	maxTokens  int64
	others     func() (float64, int64) // a parallel run's other workers' spend
	stamp      uint64                  // the parser's usage stamp at the last look
	stamped    bool                    // stamp holds one

	mu       sync.Mutex   // the fields below: the reader goroutine and the timer
	last     agents.Usage // the usage at the last line
	cost     float64      // what it cost
	src      agents.CostSource
	saved    agents.Usage // the usage last written to state.json
	savedAt  time.Time
	exceeded string // which budget stopped the call: "budget.max_cost_usd" or "budget.max_tokens"
	timer    *time.Timer
	shadow   *state.State // a copy of the state the timer writes, never the supervisor's own
	closed   bool         // the call is over: nothing more is written
}

// watchSpend returns the watch of a call whose parser reports usage while
// it runs, or nil.
func (s *Supervisor) watchSpend(parser agents.Parser) *spendWatch {
	if _, ok := agents.UsageSoFar(parser); !ok {
		return nil
	}
	u, b := s.st.Usage, s.st.Budget
	w := &spendWatch{s: s, parser: parser, baseCost: u.CostUSD, baseTokens: u.InputTokens + u.OutputTokens,
		maxCost: b.MaxCostUSD, maxTokens: b.MaxTokens}
	if one := s.o.Single; one != nil && one.Others != nil {
		w.others = one.Others
	}
	return w
}

// line looks at the usage after a stdout line; it returns false when a
// budget is spent and the call must stop now.
func (w *spendWatch) line() bool {
	if w == nil {
		return true
	}
	// Most lines of a plain output report no usage: with a stamp that did
	// not move there is nothing new to look at. Only this goroutine writes
	// exceeded, so it reads it without the lock.
	if stamp, ok := agents.UsageStamp(w.parser); ok {
		if w.stamped && stamp == w.stamp {
			return w.exceeded == ""
		}
		w.stamp, w.stamped = stamp, true
	}
	u, _ := agents.UsageSoFar(w.parser)
	w.mu.Lock()
	defer w.mu.Unlock()
	if u != w.last {
		w.last = u
		w.cost, w.src = w.s.callCost(u)
		// A parallel run's budget is the run's: what its other workers
		// spent meanwhile counts too.
		var otherCost float64
		var otherTokens int64
		if w.others != nil {
			otherCost, otherTokens = w.others()
		}
		switch {
		case w.exceeded != "" || u.Final:
			// The call's work is over: a budget its totals reach stops the
			// run after it (the stop rules), not the call.
		case w.maxCost > 0 && w.src != agents.CostUnknown && w.baseCost+otherCost+w.cost >= w.maxCost:
			w.exceeded = "budget.max_cost_usd"
		case w.maxTokens > 0 && w.baseTokens+otherTokens+u.Tokens() >= w.maxTokens:
			w.exceeded = "budget.max_tokens"
		}
	}
	if w.last != w.saved {
		if w.exceeded != "" || time.Since(w.savedAt) >= saveUsageEvery {
			w.save()
		} else {
			w.saveLater()
		}
	}
	return w.exceeded == ""
}

// callUsage is the record of the usage so far. w.mu is held.
func (w *spendWatch) callUsage() *state.CallUsage {
	u := w.last
	return &state.CallUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: w.cost, CostSource: string(w.src), Model: u.Model}
}

// save writes the call's usage so far into state.json's record of the
// running process, so that a runr killed now still counts it on resume.
// w.mu is held; the supervisor waits for the call, so its state is the
// reader goroutine's to write.
func (w *spendWatch) save() {
	p := w.s.st.AgentProcess
	if w.closed || p == nil {
		return
	}
	p.Usage = w.callUsage()
	w.write(w.s.st)
}

// saveLater has the timer write the usage once a second has passed since
// the last write. w.mu is held.
func (w *spendWatch) saveLater() {
	if w.closed || w.timer != nil || w.s.st.AgentProcess == nil {
		return
	}
	if w.shadow == nil {
		// The state does not change while the call runs but for the usage,
		// so one copy made now serves every later write of the timer.
		data, err := json.Marshal(w.s.st)
		var cp state.State
		if err == nil {
			err = json.Unmarshal(data, &cp)
		}
		if err != nil {
			if w.s.log != nil {
				w.s.log.Warn("copy of the state for the call's usage failed", zap.Error(err))
			}
			return
		}
		w.shadow = &cp
	}
	w.timer = time.AfterFunc(time.Until(w.savedAt.Add(saveUsageEvery)), w.flush)
}

// flush is the timer's write of the latest usage.
func (w *spendWatch) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.closed || w.last == w.saved || w.shadow.AgentProcess == nil {
		return
	}
	w.shadow.AgentProcess.Usage = w.callUsage()
	w.write(w.shadow)
}

func (w *spendWatch) write(st *state.State) {
	w.saved, w.savedAt = w.last, time.Now()
	if err := w.s.store.Save(st); err != nil && w.s.log != nil {
		w.s.log.Warn("state save of the call's usage failed", zap.Error(err))
	}
}

// close ends the watch when the call is over, before the supervisor
// writes its state again: no timer writes after it.
func (w *spendWatch) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// exceededBy ends the watch and names the budget that stopped the call
// ("budget.max_cost_usd" or "budget.max_tokens"); "" when none did.
func (w *spendWatch) exceededBy() string {
	if w == nil {
		return ""
	}
	w.close()
	return w.exceeded
}

// recoverCallUsage adds to the run's usage, and to its model's totals,
// what the call in flight when runr crashed had used as far as state.json
// knew it, and clears that record so that it counts once. It returns the
// call for the cost ledger (an agent_call event of the interrupted call),
// or false when there was nothing to add. agent is the kind that made the
// call.
func recoverCallUsage(st *state.State, agent string) (state.Call, bool) {
	p := st.AgentProcess
	if p == nil || p.Usage == nil {
		return state.Call{}, false
	}
	u := p.Usage
	call := state.Call{Agent: agent, Model: u.Model, InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, OutputTokens: u.OutputTokens, CostSource: u.CostSource}
	switch u.CostSource {
	case state.CostReported:
		call.CostReportedUSD = u.CostUSD
	case state.CostEstimated:
		call.CostEstimatedUSD = u.CostUSD
	default:
		call.CostSource = state.CostUnknown
	}
	if !p.StartedAt.IsZero() && !st.UpdatedAt.IsZero() && st.UpdatedAt.After(p.StartedAt) {
		call.DurationMS = st.UpdatedAt.Sub(p.StartedAt).Milliseconds()
	}
	st.Usage.AddCall(call)
	p.Usage = nil
	return call, true
}
