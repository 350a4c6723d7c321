package resume

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Limit kinds as the stop's details spell them (agents.LimitKind).
const (
	limitSpendCap = "spend_cap"
)

// maxJitter bounds the jitter added to a wait for a limit's reset, and
// jitterShare is the largest share of the wait it may be: a reset is the
// moment every client of the account tries again, so runr tries a little
// later than that, but never much.
const (
	maxJitter   = 30 * time.Second
	jitterShare = 0.05
)

// Action is what the auto-resume policy decides after a stop.
type Action string

// Actions.
const (
	ActionWait   Action = "wait"    // wait Decision.Wait, then continue the run
	ActionGiveUp Action = "give_up" // the stop stands
)

// GiveUp says why the policy gave up: a fallback agent (agent.fallback) may
// take over where the reason is GiveUpBeyondMaxWait or GiveUpSpendCap.
type GiveUp string

// Reasons to give up.
const (
	GiveUpNone           GiveUp = ""
	GiveUpNotResumable   GiveUp = "not_auto_resumable" // the stop's reason is not auto-resumable
	GiveUpSignal         GiveUp = "signal"             // a signal to this runr caused the stop
	GiveUpMaxAutoResumes GiveUp = "max_auto_resumes"   // resume.max_auto_resumes are used up
	GiveUpSpendCap       GiveUp = "spend_cap"          // a spend cap with no reset: waiting does not lift it
	GiveUpBeyondMaxWait  GiveUp = "beyond_max_wait"    // the limit resets after resume.max_wait
)

// Decision is the auto-resume policy's answer for one stop.
type Decision struct {
	Action Action
	GiveUp GiveUp
	// Wait is how long to wait before continuing (jitter included), and
	// Jitter the part of it added after a limit's reset.
	Wait, Jitter time.Duration
	// ResetAt is the limit's reset time the wait runs to (zero for a
	// backoff), and LimitKind the limit's kind from the stop's details.
	ResetAt   time.Time
	LimitKind string
	// Why says it for people: what runr waits for, or why the stop stands.
	Why string
}

// Decide is the auto-resume policy: whether a run that stopped as st may
// be continued automatically, with done automatic resumes already made in
// this invocation, and after how long.
//
//   - A stop a signal caused (condition signal) is not continued, whatever
//     its reason: st is a stop of this invocation, so the signal came to
//     this runr, and a signal is never swallowed (an evicted pod must exit
//     within its grace period). A terminated run resumed afresh is
//     continued as before: its new stop is what is decided on.
//   - Only an auto-resumable stop is continued, at most
//     resume.max_auto_resumes times.
//   - A rate or usage limit with a reset time waits until the reset plus a
//     jitter (jitter(limit) returns at most limit; the limit is 5% of the
//     wait, at most 30s), never longer than resume.max_wait; a reset beyond
//     max_wait is not waited for: the stop stands (GiveUpBeyondMaxWait).
//   - A spend cap with no reset is not waited for (GiveUpSpendCap).
//   - Any other stop waits its backoff (the last entry repeats), capped by
//     max_wait.
//
// A nil jitter adds none.
func Decide(st *state.State, p config.Resume, done int, now time.Time, jitter func(limit time.Duration) time.Duration) Decision {
	if st == nil || st.StopReason == nil {
		return Decision{Action: ActionGiveUp, GiveUp: GiveUpNotResumable, Why: "the stop is not auto-resumable"}
	}
	if st.StopReason.Condition == stopreasons.ConditionSignal {
		return Decision{Action: ActionGiveUp, GiveUp: GiveUpSignal, Why: "a signal stopped the run"}
	}
	if !stopreasons.AutoResumable(st.StopReason.Code) {
		return Decision{Action: ActionGiveUp, GiveUp: GiveUpNotResumable, Why: "the stop is not auto-resumable"}
	}
	var d Decision
	if st.StopReason.Details != nil {
		d.LimitKind = st.StopReason.Details.LimitKind
	}
	if done >= p.MaxAutoResumes {
		return Decision{Action: ActionGiveUp, GiveUp: GiveUpMaxAutoResumes, LimitKind: d.LimitKind,
			Why: fmt.Sprintf("resume.max_auto_resumes (%d) automatic resumes are used up", p.MaxAutoResumes)}
	}
	if st.StopReason.Code == stopreasons.WorkerRateLimited {
		reset, hasReset := ResetAt(st)
		switch {
		case hasReset:
			wait := max(reset.Sub(now), 0)
			if p.MaxWait > 0 && wait > p.MaxWait {
				return Decision{Action: ActionGiveUp, GiveUp: GiveUpBeyondMaxWait, ResetAt: reset, LimitKind: d.LimitKind,
					Why: fmt.Sprintf("the %s resets at %s, in %s: beyond resume.max_wait (%s), so runr does not wait for it",
						limitName(d.LimitKind), reset.UTC().Format(time.RFC3339), stopreasons.Duration(wait), stopreasons.TrimDuration(p.MaxWait))}
			}
			if jitter != nil && wait > 0 {
				d.Jitter = jitter(min(time.Duration(float64(wait)*jitterShare), maxJitter))
			}
			d.Wait = wait + d.Jitter
			if p.MaxWait > 0 && d.Wait > p.MaxWait {
				d.Jitter -= d.Wait - p.MaxWait
				d.Wait = p.MaxWait
			}
			d.Action, d.ResetAt = ActionWait, reset
			d.Why = fmt.Sprintf("rate limit (%s) resets at %s", kindOrUnknown(d.LimitKind), clock(reset))
			return d
		case d.LimitKind == limitSpendCap:
			return Decision{Action: ActionGiveUp, GiveUp: GiveUpSpendCap, LimitKind: d.LimitKind,
				Why: "the agent hit a spend cap (no credits or quota left) with no reset time: waiting does not lift it; top up the account, then resume the run"}
		}
	}
	if n := len(p.Backoff); n > 0 {
		d.Wait = p.Backoff[min(done, n-1)]
	}
	if p.MaxWait > 0 && d.Wait > p.MaxWait {
		d.Wait = p.MaxWait
	}
	d.Action = ActionWait
	d.Why = fmt.Sprintf("backoff %s", d.Wait)
	return d
}

func limitName(kind string) string {
	switch kind {
	case "rate":
		return "rate limit"
	case "usage_window":
		return "usage limit"
	case limitSpendCap:
		return "spend cap"
	}
	return "limit"
}

// clock is a reset time for people, in the local zone: "01:21", with
// seconds when it is not on the minute.
func clock(t time.Time) string {
	if t.Second() == 0 {
		return t.Local().Format("15:04")
	}
	return t.Local().Format("15:04:05")
}

func kindOrUnknown(kind string) string {
	if kind == "" {
		return "unknown kind"
	}
	return kind
}

// Jitter returns a jitter source seeded with seed: the same seed gives the
// same jitters, so a recorded seed tells how a wait came about.
func Jitter(seed uint64) func(limit time.Duration) time.Duration {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(limit time.Duration) time.Duration {
		if limit <= 0 {
			return 0
		}
		return time.Duration(r.Int64N(int64(limit) + 1))
	}
}

// NextWait decides whether a run that stopped as st may be continued
// automatically, done automatic resumes into this invocation, and how long
// to wait first, without jitter: Decide's wait.
func NextWait(st *state.State, p config.Resume, done int, now time.Time) (time.Duration, bool) {
	d := Decide(st, p, done, now, nil)
	return d.Wait, d.Action == ActionWait
}

// ResetAt is the rate limit's reset time the agent reported, from the stop's
// details (reset_at, RFC 3339).
func ResetAt(st *state.State) (time.Time, bool) {
	if st.StopReason == nil || st.StopReason.Details == nil || st.StopReason.Details.ResetAt == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, st.StopReason.Details.ResetAt)
	return t, err == nil
}

// RecordAuto notes one automatic resume in the state: its time, the stop it
// resumes from, and how long runr waited.
func RecordAuto(st *state.State, at time.Time, wait time.Duration) {
	var code stopreasons.Code
	if st.StopReason != nil {
		code = st.StopReason.Code
	}
	st.AutoResume.Count++
	st.AutoResume.History = append(st.AutoResume.History, state.AutoResumeRecord{At: at.UTC(), Reason: code, WaitMS: wait.Milliseconds()})
}
