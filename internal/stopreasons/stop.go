package stopreasons

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Stop is one stop of a run: its reason, the rule or event that decided it
// with its figures, and the evidence. The same value goes from the
// evaluator or the tick that decided it into state.json, stop.json, the
// doctor's report and --json.
type Stop struct {
	Code Code `json:"code"`
	// Condition is the rule key ("max_reject_rate", "budget.time"), the
	// custom entry ("stop.failure[0]: output_pattern"), or the event
	// ("signal", "agent.timeout").
	Condition string `json:"condition,omitempty"`
	// Value and Threshold are the rule's figures: a number, or a duration
	// as text ("12m0s"); nil where the rule has none.
	Value     any    `json:"value,omitempty"`
	Threshold any    `json:"threshold,omitempty"`
	Message   string `json:"message"`
	// Details is the evidence the stop's family has.
	Details *StopDetails `json:"details,omitempty"`
}

// StopDetails is the evidence of one stop; each family fills its own
// fields and leaves the others empty.
type StopDetails struct {
	// Where the run was when it stopped: every stop of a run with
	// milestones.
	Milestone     int    `json:"milestone,omitempty"`
	MilestoneGoal string `json:"milestone_goal,omitempty"`

	// Failures (failure, review and worker families): the last failing
	// command or agent program, and its error signature.
	Command   string `json:"command,omitempty"`
	Signature string `json:"signature,omitempty"`

	// Guards (constraint family): the files, the rule each one broke, and
	// those the agent committed itself (undoing them takes more than a
	// stash).
	// Files lists at most MaxDetailFiles files; FilesOmitted counts the
	// others (Bounded).
	Files        []string `json:"files,omitempty"`
	FilesOmitted int      `json:"files_omitted,omitempty"`
	Rules        []string `json:"rules,omitempty"`
	Committed    []string `json:"committed,omitempty"`
	// Other is the live run whose claim overlaps (file_collision).
	Other string `json:"other,omitempty"`

	// Workers: the agent's own error, and when a rate limit resets
	// (RFC 3339), if the agent said; the limit's kind (rate, usage_window,
	// spend_cap, overloaded), which decides whether --auto-resume waits.
	AgentError string `json:"agent_error,omitempty"`
	ResetAt    string `json:"reset_at,omitempty"`
	LimitKind  string `json:"limit_kind,omitempty"`

	// Stalled: the last sign of life seen of the agent's call (output,
	// CPU time, ...) and when (RFC 3339).
	LastSign   string `json:"last_sign,omitempty"`
	LastSignAt string `json:"last_sign_at,omitempty"`

	// Unapproved counts the milestones a skip-mode run finished without
	// approving.
	Unapproved int `json:"unapproved,omitempty"`

	// Untested is the evidence of changes_not_tested; its fields sit
	// beside the others in JSON (kind, covered, min_changed, uncovered).
	*Untested
}

// Untested kinds: what a verify that passed did not show.
const (
	UntestedCoverage = "coverage" // it ran fewer changed lines than verify.coverage.min_changed
	UntestedNoTests  = "no_tests" // its test runners ran no test (verify.require_tests)
)

// MaxUncovered is the most files Untested lists; UncoveredMore counts the
// rest, so a stop's details stay small whatever the change (DESIGN §5).
const MaxUncovered = 100

// Untested is what a verify that passed failed to show: that it ran the
// milestone's changed lines, or any test at all.
type Untested struct {
	Kind string `json:"kind"`
	// Covered is the fraction of the changed executable lines verify ran,
	// MinChanged the threshold (coverage only).
	Covered    *float64 `json:"covered,omitempty"`
	MinChanged float64  `json:"min_changed,omitempty"`
	// Uncovered are the files with the changed lines no verify command
	// ran, at most MaxUncovered; UncoveredMore counts the files left out.
	Uncovered     []Uncovered `json:"uncovered,omitempty"`
	UncoveredMore int         `json:"uncovered_more,omitempty"`
}

// Uncovered is one file's changed lines that no verify command ran, as
// ranges: "12-15,20".
type Uncovered struct {
	File  string `json:"file"`
	Lines string `json:"lines"`
}

// MaxDetailFiles is how many files a stop's details list (DESIGN §5): an
// agent that changed 100,000 files must not make a state.json, a summary
// or a report of that size.
const MaxDetailFiles = 100

// Bounded is d with at most MaxDetailFiles files, the rule of each kept
// file, and the committed files among them; FilesOmitted counts the files
// left out, with those already left out.
func (d StopDetails) Bounded() StopDetails {
	if len(d.Files) <= MaxDetailFiles {
		return d
	}
	d.FilesOmitted += len(d.Files) - MaxDetailFiles
	d.Files = slices.Clone(d.Files[:MaxDetailFiles])
	if len(d.Rules) > MaxDetailFiles {
		d.Rules = slices.Clone(d.Rules[:MaxDetailFiles])
	}
	if d.Committed != nil {
		kept := []string{}
		for _, f := range d.Committed {
			if slices.Contains(d.Files, f) {
				kept = append(kept, f)
			}
		}
		d.Committed = kept
	}
	return d
}

// FirstFiles is files as a message lists them: at most MaxDetailFiles,
// and the number left out.
func FirstFiles(files []string) ([]string, int) {
	if len(files) <= MaxDetailFiles {
		return files, 0
	}
	return files[:MaxDetailFiles], len(files) - MaxDetailFiles
}

// ShowFiles joins file names for a line of text as ShowPaths does, and
// says how many more there are: "a.go, b.go and 99900 more".
func ShowFiles(files []string, omitted int) string {
	s := ShowPaths(files)
	if omitted > 0 {
		s += fmt.Sprintf(" and %d more", omitted)
	}
	return s
}

// MarshalJSON writes the details, and for a guard's stop (one that names the
// rules its files broke) always says which of them the agent committed
// itself, an empty list included, so a script can tell "none" from "not
// recorded".
func (d StopDetails) MarshalJSON() ([]byte, error) {
	type plain StopDetails
	if d.Rules == nil {
		return json.Marshal(plain(d))
	}
	committed := d.Committed
	if committed == nil {
		committed = []string{}
	}
	return json.Marshal(struct {
		plain
		Committed []string `json:"committed"`
	}{plain(d), committed})
}
