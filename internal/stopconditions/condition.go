package stopconditions

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Condition is one custom stop condition of `stop.success`, `stop.failure` or
// `stop.conditions`.
type Condition interface {
	// Type is the condition's `type:` in the config, e.g. "output_pattern".
	Type() string
	// Evaluate judges the condition against a snapshot of the run.
	Evaluate(s *Snapshot) Result
}

// Result is the judgement of one condition or rule.
type Result struct {
	Met      bool
	Progress float64 // 0..1; 1 when met
	Message  string  // says the value and the threshold
	// Unknown: the condition could not be judged this time (its script was
	// not run or was cut short because the run is stopping). It is not met,
	// and neither is a `not` of it: a run that is stopping for a signal or
	// its budget never stops for a condition nobody could check.
	Unknown bool
}

// The condition types, as spelled after `type:`.
const (
	TypeMaxIterations     = "max_iterations"
	TypeMaxDuration       = "max_duration"
	TypeTestFailureStreak = "test_failure_streak"
	TypeAllTestsPass      = "all_tests_pass"
	TypeSpecificTestsPass = "specific_tests_pass"
	TypeFileCreated       = "file_created"
	TypeFileContains      = "file_contains"
	TypeOutputPattern     = "output_pattern"
	TypeOnError           = "on_error"
	TypeCustomScript      = "custom_script"
	TypeUserSignal        = "user_signal"
	TypeAll               = "all"
	TypeAny               = "any"
	TypeNot               = "not"
	TypeNever             = "never"
)

// TypeNoProgress is no_progress{iterations}: the streak the no_progress rule
// judges, with a count of its own, and so spelled as the rule's key.
var TypeNoProgress = NoProgress.Key

// countResult judges a count that fires when it reaches its threshold.
// one and many are what it counts, for a count of one and of any other.
func countResult(value, threshold int, one, many string) Result {
	return Result{
		Met:      value >= threshold,
		Progress: fraction(float64(value), float64(threshold)),
		Message:  fmt.Sprintf("%s (limit %d)", stopreasons.Count(value, one, many), threshold),
	}
}

// fraction is value/threshold within 0..1.
func fraction(value, threshold float64) float64 {
	if threshold <= 0 {
		return 0
	}
	return clamp01(value / threshold)
}

func clamp01(f float64) float64 {
	switch {
	case f > 1:
		return 1
	case f >= 0:
		return f
	}
	return 0 // negative or NaN
}

func boolProgress(met bool) float64 {
	if met {
		return 1
	}
	return 0
}

type maxIterations struct{ count int }

func (maxIterations) Type() string { return TypeMaxIterations }
func (c maxIterations) Evaluate(s *Snapshot) Result {
	return countResult(s.Iteration, c.count, "iteration", "iterations")
}

type maxDuration struct{ d time.Duration }

func (maxDuration) Type() string { return TypeMaxDuration }
func (c maxDuration) Evaluate(s *Snapshot) Result {
	return Result{
		Met:      s.Elapsed >= c.d,
		Progress: fraction(float64(s.Elapsed), float64(c.d)),
		Message:  fmt.Sprintf("%s elapsed (limit %s)", stopreasons.Duration(s.Elapsed), stopreasons.Duration(c.d)),
	}
}

type testFailureStreak struct{ count int }

func (testFailureStreak) Type() string { return TypeTestFailureStreak }
func (c testFailureStreak) Evaluate(s *Snapshot) Result {
	return countResult(s.TestFailStreak, c.count, "failed verify run in a row", "failed verify runs in a row")
}

type allTestsPass struct{}

func (allTestsPass) Type() string { return TypeAllTestsPass }
func (allTestsPass) Evaluate(s *Snapshot) Result {
	if len(s.Verify) == 0 {
		return Result{Message: "no verify run yet"}
	}
	passed := 0
	for _, c := range s.Verify {
		if c.Passed {
			passed++
		}
	}
	return Result{
		Met:      passed == len(s.Verify),
		Progress: fraction(float64(passed), float64(len(s.Verify))),
		Message:  fmt.Sprintf("%d of %d verify commands passed", passed, len(s.Verify)),
	}
}

type specificTestsPass struct{ tests []string }

func (specificTestsPass) Type() string { return TypeSpecificTestsPass }
func (c specificTestsPass) Evaluate(s *Snapshot) Result {
	passed := make(map[string]bool, len(s.Verify))
	for _, v := range s.Verify {
		passed[v.Command] = v.Passed
	}
	n := 0
	var missing []string
	for _, t := range c.tests {
		if passed[t] {
			n++
		} else {
			missing = append(missing, t)
		}
	}
	msg := fmt.Sprintf("%d of %d named verify commands passed", n, len(c.tests))
	if len(missing) > 0 {
		msg += fmt.Sprintf("; not passed: %q", missing[0])
	}
	return Result{
		Met:      len(missing) == 0,
		Progress: fraction(float64(n), float64(len(c.tests))),
		Message:  msg,
	}
}

type noProgress struct{ iterations int }

func (noProgress) Type() string { return TypeNoProgress }
func (c noProgress) Evaluate(s *Snapshot) Result {
	return countResult(s.NoProgress, c.iterations, "iteration without progress", "iterations without progress")
}

type fileCreated struct{ path string }

func (fileCreated) Type() string { return TypeFileCreated }
func (c fileCreated) Evaluate(s *Snapshot) Result {
	_, err := os.Stat(filepath.Join(s.RepoDir, c.path))
	exists := err == nil
	switch {
	case exists && s.StartFiles[c.path]:
		return Result{Message: fmt.Sprintf("%s already existed when the run started", c.path)}
	case exists:
		return Result{Met: true, Progress: 1, Message: fmt.Sprintf("%s was created", c.path)}
	}
	return Result{Message: fmt.Sprintf("%s does not exist yet", c.path)}
}

type fileContains struct{ path, content string }

func (fileContains) Type() string { return TypeFileContains }
func (c fileContains) Evaluate(s *Snapshot) Result {
	data, err := os.ReadFile(filepath.Join(s.RepoDir, c.path))
	if err != nil {
		return Result{Message: fmt.Sprintf("%s cannot be read: %v", c.path, unwrapPathError(err))}
	}
	if bytes.Contains(data, []byte(c.content)) {
		return Result{Met: true, Progress: 1, Message: fmt.Sprintf("%s contains %q", c.path, c.content)}
	}
	return Result{Message: fmt.Sprintf("%s does not contain %q", c.path, c.content)}
}

// unwrapPathError drops the absolute path an *os.PathError repeats, since
// messages name the path as the user wrote it.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

type outputPattern struct {
	pattern string
	re      *regexp.Regexp // nil: pattern is plain text
}

func (outputPattern) Type() string { return TypeOutputPattern }
func (c outputPattern) Evaluate(s *Snapshot) Result {
	var met bool
	if c.re != nil {
		met = c.re.MatchString(s.LastOutput)
	} else {
		met = strings.Contains(s.LastOutput, c.pattern)
	}
	if met {
		return Result{Met: true, Progress: 1, Message: fmt.Sprintf("the agent's output matched %q", c.pattern)}
	}
	return Result{Message: fmt.Sprintf("the agent's output did not match %q", c.pattern)}
}

type onError struct {
	re *regexp.Regexp // nil: any error
}

func (onError) Type() string { return TypeOnError }
func (c onError) Evaluate(s *Snapshot) Result {
	e := s.LastError
	switch {
	case e == nil:
		return Result{Message: "no error this tick"}
	case c.re == nil:
		return Result{Met: true, Progress: 1, Message: fmt.Sprintf("%s error: %s", e.Source, firstLine(e.Text))}
	case c.re.MatchString(e.Text):
		return Result{Met: true, Progress: 1, Message: fmt.Sprintf("%s error matched %q", e.Source, c.re.String())}
	}
	return Result{Message: fmt.Sprintf("%s error did not match %q", e.Source, c.re.String())}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const max = 200
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

type userSignal struct{}

func (userSignal) Type() string { return TypeUserSignal }
func (userSignal) Evaluate(s *Snapshot) Result {
	if s.StopRequested {
		return Result{Met: true, Progress: 1, Message: "a stop was requested with runr stop"}
	}
	return Result{Message: "no stop requested"}
}

type all struct{ conditions []Condition }

func (all) Type() string { return TypeAll }
func (c all) Evaluate(s *Snapshot) Result {
	met, unknown, sum := 0, 0, 0.0
	var open []string
	for _, sub := range c.conditions {
		r := sub.Evaluate(s)
		sum += r.Progress
		if r.Met {
			met++
		} else {
			open = append(open, sub.Type()+": "+r.Message)
		}
		if r.Unknown {
			unknown++
		}
	}
	msg := fmt.Sprintf("%d of %d conditions met", met, len(c.conditions))
	if len(open) > 0 {
		msg += "; not yet " + open[0]
	}
	return Result{
		Met:      met == len(c.conditions),
		Progress: clamp01(sum / float64(len(c.conditions))),
		Message:  msg,
		// Unknown only while no other part is known to be unmet.
		Unknown: unknown > 0 && unknown == len(open),
	}
}

type anyOf struct{ conditions []Condition }

func (anyOf) Type() string { return TypeAny }
func (c anyOf) Evaluate(s *Snapshot) Result {
	best := Result{}
	bestType := ""
	unknown := false
	// Every part is evaluated, not just up to the first met one, so that the
	// progress is the maximum over all of them.
	for _, sub := range c.conditions {
		r := sub.Evaluate(s)
		unknown = unknown || r.Unknown
		if bestType == "" || (r.Met && !best.Met) || (r.Met == best.Met && r.Progress > best.Progress) {
			best, bestType = r, sub.Type()
		}
	}
	return Result{Met: best.Met, Progress: clamp01(best.Progress), Message: bestType + ": " + best.Message,
		Unknown: unknown && !best.Met}
}

type not struct{ condition Condition }

func (not) Type() string { return TypeNot }
func (c not) Evaluate(s *Snapshot) Result {
	r := c.condition.Evaluate(s)
	if r.Unknown {
		return Result{Unknown: true, Message: "not " + c.condition.Type() + ": " + r.Message}
	}
	return Result{
		Met:      !r.Met,
		Progress: boolProgress(!r.Met),
		Message:  "not " + c.condition.Type() + ": " + r.Message,
	}
}

type never struct{}

func (never) Type() string              { return TypeNever }
func (never) Evaluate(*Snapshot) Result { return Result{Message: "never met"} }

// FileCreatedPaths lists the paths that file_created conditions watch, in
// conditions nested at any depth, so that the supervisor can record which of
// them exist when a run starts (Snapshot.StartFiles).
func FileCreatedPaths(lists ...[]Condition) []string {
	var out []string
	seen := map[string]bool{}
	walkConditions(lists, func(c Condition) {
		if fc, ok := c.(fileCreated); ok && !seen[fc.path] {
			seen[fc.path] = true
			out = append(out, fc.path)
		}
	})
	return out
}

// ScriptPrograms lists the programs of custom_script conditions nested at
// any depth, so that a run can refuse to start when one cannot be run: a
// check that cannot run would otherwise never be met, silently.
func ScriptPrograms(lists ...[]Condition) []string {
	var out []string
	seen := map[string]bool{}
	walkConditions(lists, func(c Condition) {
		if cs, ok := c.(customScript); ok && !seen[cs.script] {
			seen[cs.script] = true
			out = append(out, cs.script)
		}
	})
	return out
}

// walkConditions calls fn for every condition of the lists and every
// condition nested inside all, any and not.
func walkConditions(lists [][]Condition, fn func(Condition)) {
	var walk func(Condition)
	walk = func(c Condition) {
		fn(c)
		switch c := c.(type) {
		case all:
			for _, sub := range c.conditions {
				walk(sub)
			}
		case anyOf:
			for _, sub := range c.conditions {
				walk(sub)
			}
		case not:
			walk(c.condition)
		}
	}
	for _, l := range lists {
		for _, c := range l {
			walk(c)
		}
	}
}
