package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Ends reports whether the check ends the verify step: a signal or the
// time budget cut it short, or the command timed out or failed.
func (c CheckFacts) Ends() bool {
	return c.At.cuts(c.Process) || c.Process.TimedOut || c.Process.ExitCode != 0
}

// verify decides what the checks came to: the first that failed fails the
// attempt, one past verify.timeout stops the run, and all passing pass it.
func (d *Decision) verify(f Facts, run Run, r Rules) result {
	prev := map[string]bool{}
	for _, c := range run.Checks {
		prev[c.Command] = c.Passed
	}
	var results []state.CheckResult
	for _, c := range f.Checks {
		p := c.Process
		if res, cut := interruption(p, c.At, run.Budget); cut {
			return res
		}
		if p.TimedOut {
			d.Verify = "timed out"
			d.Failure = &state.Failure{Tick: run.Tick, Phase: state.PhaseVerify, Command: c.Command, ExitCode: p.ExitCode,
				Tail: proc.Tail(p.Tail, feedbackLines), Log: f.Log}
			return result{Event: Event{Outcome: VerifyTimedOut}, stop: &stop{Stop: stopreasons.Stop{Condition: "verify.timeout", Threshold: stopreasons.TrimDuration(r.VerifyTimeout),
				Message: fmt.Sprintf("%q ran past verify.timeout (%s)", c.Command, stopreasons.TrimDuration(r.VerifyTimeout)), Details: &stopreasons.StopDetails{Command: c.Command}}}}
		}
		passed := p.ExitCode == 0
		if passed && !prev[c.Command] && hasCheck(run.Checks, c.Command) {
			// A check went from failing to passing.
			d.progress()
		}
		results = append(results, state.CheckResult{Command: c.Command, Passed: passed, ExitCode: p.ExitCode})
		if !passed {
			d.Verify = "failed"
			tail := proc.Tail(p.Tail, feedbackLines)
			sig := stopconditions.Signature(c.Command, tail)
			d.Checks, d.SetChecks = results, true
			d.Counters.TestFailStreak++
			d.Failure = &state.Failure{Tick: run.Tick, Phase: state.PhaseVerify, Command: c.Command, ExitCode: p.ExitCode,
				Tail: tail, Signature: sig, Log: f.Log}
			return result{Event: Event{Outcome: VerifyFailed}, signature: sig, errText: fmt.Sprintf("%s exited %d", c.Command, p.ExitCode),
				errEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceVerify, Text: tail}}
		}
	}
	if f.Err != nil {
		return fault(f.Err)
	}
	d.Checks, d.SetChecks = results, true
	d.Counters.TestFailStreak = 0
	if len(results) > 0 {
		d.Verify = "passed"
	}
	if res, untested := d.untested(f, run, r); untested {
		return res
	}
	return result{Event: Event{Outcome: VerifyPassed}}
}

// untested fails a verify whose commands all passed without showing that
// they tested the work: every test runner recognised in their output ran
// no test (verify.require_tests auto), or none was recognised (on), or
// they ran fewer of the milestone's changed executable lines than
// verify.coverage.min_changed. It reports false for a verify that showed
// enough.
func (d *Decision) untested(f Facts, run Run, r Rules) (result, bool) {
	t := f.Tested
	if t == nil {
		return result{}, false
	}
	var u *stopreasons.Untested
	var cond, text string
	switch {
	case r.RequireTests == config.RequireTestsOn && len(t.Tests.Ran) == 0:
		cond, u = "verify.require_tests", &stopreasons.Untested{Kind: stopreasons.UntestedNoTests}
		text = "verify passed, but its output holds no summary of a test runner runr recognises (verify.require_tests: on): " +
			"make the verify commands run the tests with go test, pytest, cargo test, node --test, Jest or Vitest, or print a line \"N passed, N failed\"."
	case r.RequireTests != config.RequireTestsOff && t.Tests.NoneRan():
		cond, u = "verify.require_tests", &stopreasons.Untested{Kind: stopreasons.UntestedNoTests}
		text = fmt.Sprintf("verify passed, but ran no test: %s reported 0 tests run. Add tests for the milestone's work, "+
			"or make the verify commands run them (a -run or -k filter that matches nothing runs none).", strings.Join(t.Tests.Recognised(), ", "))
	case r.MinChanged > 0 && t.Coverage != nil && t.Coverage.Executable > 0 && t.Coverage.Covered() < r.MinChanged:
		cond, u = "verify.coverage.min_changed", t.Coverage.Untested(r.MinChanged)
		text = t.Coverage.Feedback(r.MinChanged)
	default:
		return result{}, false
	}
	d.Verify = "passed, " + u.Kind
	var files []string
	for _, f := range u.Uncovered {
		files = append(files, f.File)
	}
	sig := stopconditions.Signature(cond, u.Kind+" "+strings.Join(files, " "))
	d.Failure = &state.Failure{Tick: run.Tick, Phase: state.PhaseVerify, Command: cond, Tail: text, Signature: sig, Log: f.Log, Untested: u}
	ev := state.UntestedEvent{Untested: *u}
	if u.Kind == stopreasons.UntestedCoverage {
		ev.Executable, ev.Run = t.Coverage.Executable, t.Coverage.Run
	}
	d.Events = append(d.Events, ev)
	return result{Event: Event{Outcome: VerifyUntested}, signature: sig, errText: firstLine(text, cond),
		errEvent: &stopconditions.ErrorEvent{Source: stopconditions.SourceVerify, Text: text}}, true
}

// review judges the review command by its exit: 0 approves, 1 requests
// changes, 2 rejects. A review that could not run, crashed (any other
// exit) or ran past verify.timeout judged nothing: a failed attempt, not a
// request for changes.
func (d *Decision) review(f Facts, run Run, r Rules) result {
	if f.Err != nil && !errors.Is(f.Err, proc.ErrNotFound) {
		return fault(f.Err)
	}
	p := f.Process
	if res, cut := interruption(p, f.At, run.Budget); cut && f.Err == nil {
		return res
	}
	notes := proc.Tail(p.Tail, feedbackLines)
	failure := &state.Failure{Tick: run.Tick, Phase: state.PhaseReview, Command: f.Command, ExitCode: p.ExitCode, Tail: notes, Log: f.Log}
	switch {
	case f.Err != nil, p.TimedOut, p.ExitCode != reviewApprove && p.ExitCode != reviewChanges && p.ExitCode != reviewReject:
		why := fmt.Sprintf("the review exited %d", p.ExitCode)
		switch {
		case f.Err != nil:
			// Its program went missing after the start, where the
			// preflight found it.
			why = "the review could not be run: " + f.Err.Error()
		case p.TimedOut:
			why = fmt.Sprintf("the review ran past verify.timeout (%s)", stopreasons.TrimDuration(r.VerifyTimeout))
		case p.Signal != "":
			why = "the review was ended by a signal (" + p.Signal + ")"
		}
		failure.Signature = stopconditions.Signature(f.Command, why)
		d.Failure = failure
		// on_error judges agent and verify errors (DESIGN §4), not the review's.
		return result{Event: Event{Outcome: ReviewFailed}, signature: failure.Signature, errText: why}
	case p.ExitCode == reviewApprove:
		d.Counters.ReviewNotesHash = ""
		return result{Event: Event{Outcome: ReviewApproved}}
	case p.ExitCode == reviewReject:
		failure.Notes = notes
		d.Failure = failure
		return result{Event: Event{Outcome: ReviewRejected}, errText: "the review rejected the work",
			stop: &stop{Stop: stopreasons.Stop{Condition: "review.command", Message: fmt.Sprintf("the review rejected milestone %d", run.Milestone),
				Details: &stopreasons.StopDetails{Command: f.Command}}}}
	default:
		h := sha256.Sum256([]byte(strings.TrimSpace(notes)))
		hash := hex.EncodeToString(h[:8])
		repeated := d.Counters.ReviewNotesHash == hash
		d.Counters.ReviewNotesHash = hash
		d.Counters.ReviewRounds++
		failure.Notes = notes
		d.Failure = failure
		return result{Event: Event{Outcome: ReviewChanges}, errText: "the review requested changes", reviewRepeated: repeated}
	}
}

// Exit codes of the review command.
const (
	reviewApprove = 0
	reviewChanges = 1
	reviewReject  = 2
)
