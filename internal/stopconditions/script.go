package stopconditions

import (
	"fmt"
	"strings"
	"time"
)

// DefaultScriptTimeout bounds a custom_script that sets no timeout.
const DefaultScriptTimeout = 30 * time.Second

// Script is the process of a custom_script condition. The evaluator never
// starts it: the supervisor runs it before an evaluation, in the repository
// with the run's environment, and hands its result in through
// Snapshot.Scripts under Key.
type Script struct {
	Key     string
	Program string
	Args    []string
	Timeout time.Duration
}

// ScriptResult is how a script's process ended.
type ScriptResult struct {
	ExitCode int    // its exit status; -1 when a signal ended it
	Signal   string // the signal that ended it, e.g. "killed"
	TimedOut bool   // it ran past its timeout and was killed
	Stopped  bool   // the run stopped it (a signal, the time budget)
	Err      string // it could not be started: why; "" when it ran
	Output   string // the tail of its combined stdout and stderr
}

type customScript struct {
	script  string
	args    []string
	timeout time.Duration
}

func (customScript) Type() string { return TypeCustomScript }

// key tells the scripts of two conditions apart unless they would run the
// very same process, which then runs once per evaluation.
func (c customScript) key() string {
	return fmt.Sprintf("%q %s", append([]string{c.script}, c.args...), c.timeout)
}

// Evaluate judges the script's result from the snapshot: exit status 0 means
// met.
func (c customScript) Evaluate(s *Snapshot) Result {
	name := c.describe()
	r, ok := s.Scripts[c.key()]
	switch {
	case !ok:
		// The run was stopping when the conditions were evaluated.
		return Result{Unknown: true, Message: name + " was not run: the run is stopping"}
	case r.Stopped:
		return Result{Unknown: true, Message: name + " was stopped: the run is stopping"}
	case r.Err != "":
		return Result{Message: fmt.Sprintf("%s could not run: %s", name, r.Err)}
	case r.TimedOut:
		return Result{Message: fmt.Sprintf("%s ran past its timeout of %s and was killed", name, c.timeout)}
	case r.ExitCode == 0:
		return Result{Met: true, Progress: 1, Message: name + " exited 0"}
	case r.ExitCode > 0:
		msg := fmt.Sprintf("%s exited %d", name, r.ExitCode)
		if out := lastLine(r.Output); out != "" {
			msg += ": " + out
		}
		return Result{Message: msg}
	}
	return Result{Message: fmt.Sprintf("%s could not run: it was ended by signal %s", name, r.Signal)}
}

func (c customScript) describe() string {
	return "script " + strings.Join(append([]string{c.script}, c.args...), " ")
}

// Scripts lists the processes of the custom_script conditions nested at any
// depth, each once, for the supervisor to run before an evaluation.
func Scripts(lists ...[]Condition) []Script {
	var out []Script
	seen := map[string]bool{}
	walkConditions(lists, func(c Condition) {
		if cs, ok := c.(customScript); ok && !seen[cs.key()] {
			seen[cs.key()] = true
			out = append(out, Script{Key: cs.key(), Program: cs.script, Args: cs.args, Timeout: cs.timeout})
		}
	})
	return out
}

// lastLine is the last non-empty line of a script's output, where a check
// usually says why it failed, shortened for a message.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return firstLine(s)
}
