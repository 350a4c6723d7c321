// Package stopreasons is runr's single registry of stop reasons and runr errors.
//
// Every reason string, exit code, title, diagnosis and next-action hint in runr
// comes from the table in this package; nothing else spells them. Codes are
// stable: never renamed, never reused.
package stopreasons

// Family groups reasons; each family owns a range of exit codes.
type Family string

// The families, in the order the registry lists them.
const (
	FamilySuccess       Family = "success"
	FamilyConstraint    Family = "constraint"
	FamilyFailure       Family = "failure"
	FamilyReview        Family = "review"
	FamilyWorker        Family = "worker"
	FamilyStuck         Family = "stuck"
	FamilyResourceLimit Family = "resource_limit"
	FamilyUser          Family = "user"
	FamilyRunr          Family = "runr"
)

// Families lists every family in registry order, with the exit codes it owns.
var Families = []FamilyInfo{
	{FamilySuccess, "0", "the run completed"},
	{FamilyConstraint, "2-6", "a guard kept the agent inside its limits"},
	{FamilyFailure, "10-16", "the work did not pass verification"},
	{FamilyReview, "20-21", "the review did not approve"},
	{FamilyWorker, "30-35", "the agent itself failed or could not run"},
	{FamilyStuck, "40-43", "the run was going nowhere"},
	{FamilyResourceLimit, "124-129", "a budget ran out"},
	{FamilyUser, "130, 143", "a person or a signal stopped the run"},
	{FamilyRunr, "1, 64-78", "runr could not do what was asked (sysexits.h)"},
}

// FamilyInfo describes one family for docs and `runr reasons`.
type FamilyInfo struct {
	Family  Family `json:"family"`
	Exits   string `json:"exit_codes"`
	Meaning string `json:"meaning"`
}

// Category says whether a stop is a success, a guardrail that worked, or an error.
type Category string

// The categories.
const (
	CategoryCompleted Category = "completed"
	CategoryGuardrail Category = "guardrail"
	CategoryError     Category = "error"
)

// Reason is one row of the registry.
type Reason struct {
	Code          Code     `json:"code"`
	Title         string   `json:"title"`
	Family        Family   `json:"family"`
	ExitCode      int      `json:"exit_code"`
	Category      Category `json:"category"`
	AutoResumable bool     `json:"auto_resumable"`
	// When says in one line when runr stops with this reason.
	When string `json:"when"`
	// Diagnosis is a text/template over Details (see Diagnose).
	Diagnosis string `json:"diagnosis"`
	// NextActions are text/templates over Details; a line that starts with
	// "runr " is a command a person can run as printed.
	NextActions []string `json:"next_actions"`
}

// UnknownExitCode is the exit code of a code the registry does not know,
// such as one read from a state.json written by a newer runr.
const UnknownExitCode = 1

var byCode = func() map[Code]*Reason {
	m := make(map[Code]*Reason, len(table))
	for i := range table {
		m[table[i].Code] = &table[i]
	}
	return m
}()

// Lookup returns the registry row of code.
func Lookup(code Code) (Reason, bool) {
	r, ok := byCode[code]
	if !ok {
		return Reason{}, false
	}
	return *r, true
}

// MustLookup returns the row of a code known at compile time.
func MustLookup(code Code) Reason {
	r, ok := Lookup(code)
	if !ok {
		panic("stopreasons: no registry row for " + string(code))
	}
	return r
}

// All returns every row in registry order.
func All() []Reason {
	out := make([]Reason, len(table))
	copy(out, table)
	return out
}

// ByFamily returns the rows of one family in registry order.
func ByFamily(f Family) []Reason {
	var out []Reason
	for _, r := range table {
		if r.Family == f {
			out = append(out, r)
		}
	}
	return out
}

// ExitCode is the process exit code for code; UnknownExitCode for an unknown one.
func ExitCode(code Code) int {
	if r, ok := byCode[code]; ok {
		return r.ExitCode
	}
	return UnknownExitCode
}

// AutoResumable reports whether --auto-resume may continue a run stopped with code.
func AutoResumable(code Code) bool {
	r, ok := byCode[code]
	return ok && r.AutoResumable
}

// AutoResumableSet lists the auto-resumable codes, derived from the table.
func AutoResumableSet() []Code {
	var out []Code
	for _, r := range table {
		if r.AutoResumable {
			out = append(out, r.Code)
		}
	}
	return out
}

// Known reports whether code is in the registry.
func Known(code Code) bool {
	_, ok := byCode[code]
	return ok
}

// Terminal statuses of a stopped run (DESIGN §3).
const (
	DoneSuccess       = "done_success"
	AbortedConstraint = "aborted_constraint"
	AbortedError      = "aborted_error"
	AbortedUser       = "aborted_user"
	DonePartial       = "done_partial"
	AbortedStuck      = "aborted_stuck"
)

// TerminalStatus derives a stopped run's terminal status from its reason and
// the number of milestones it approved.
func TerminalStatus(code Code, approved int) string {
	r, ok := byCode[code]
	if !ok {
		return AbortedError
	}
	switch {
	case r.Family == FamilySuccess:
		return DoneSuccess
	case r.Family == FamilyConstraint:
		return AbortedConstraint
	case r.Category == CategoryError:
		return AbortedError
	case r.Family == FamilyUser:
		return AbortedUser
	case approved > 0:
		return DonePartial
	default:
		return AbortedStuck
	}
}

// Run statuses (DESIGN §3).
const (
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
	RunStopped   = "stopped"
	RunCrashed   = "crashed"
)

// RunStatus is the run_status of a run stopped with code.
func RunStatus(code Code) string {
	r, ok := byCode[code]
	switch {
	case !ok:
		return RunFailed
	case r.Family == FamilySuccess:
		return RunCompleted
	case r.Category == CategoryError:
		return RunFailed
	default:
		return RunStopped
	}
}
