package resume

import (
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// NextWait decides whether a run that stopped as st may be continued
// automatically, done automatic resumes into this invocation, and how long
// to wait first: the backoff for this attempt (the last entry repeats), or
// until the rate limit's reset time when the agent reported one, capped by
// max_wait either way.
func NextWait(st *state.State, p config.Resume, done int, now time.Time) (time.Duration, bool) {
	if st == nil || st.StopReason == nil || !stopreasons.AutoResumable(st.StopReason.Code) {
		return 0, false
	}
	if done >= p.MaxAutoResumes {
		return 0, false
	}
	var wait time.Duration
	if n := len(p.Backoff); n > 0 {
		wait = p.Backoff[min(done, n-1)]
	}
	if reset, ok := ResetAt(st); ok && st.StopReason.Code == stopreasons.WorkerRateLimited {
		wait = max(reset.Sub(now), 0)
	}
	if p.MaxWait > 0 && wait > p.MaxWait {
		wait = p.MaxWait
	}
	return wait, true
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
