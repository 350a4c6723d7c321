package stopreasons

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rows of DESIGN §3, pinned: a change here is a change of the contract
// with CI scripts.
var contract = []struct {
	code     Code
	family   Family
	exit     int
	category Category
	auto     bool
}{
	{"complete", "success", 0, "completed", false},
	{"guard_violation", "constraint", 2, "guardrail", false},
	{"lockfile_violation", "constraint", 3, "guardrail", false},
	{"dirty_worktree", "constraint", 4, "guardrail", false},
	{"file_collision", "constraint", 5, "guardrail", false},
	{"merge_conflict", "constraint", 6, "guardrail", false},
	{"verification_failed", "failure", 10, "guardrail", false},
	{"verification_timeout", "failure", 11, "guardrail", false},
	{"consecutive_fails", "failure", 12, "guardrail", false},
	{"retry_rate_exceeded", "failure", 13, "guardrail", false},
	{"reject_rate_exceeded", "failure", 14, "guardrail", false},
	{"condition_failed", "failure", 15, "guardrail", false},
	{"changes_not_tested", "failure", 16, "guardrail", false},
	{"review_loop_detected", "review", 20, "guardrail", false},
	{"review_rejected", "review", 21, "guardrail", false},
	{"worker_blocked", "worker", 30, "guardrail", false},
	{"worker_failed", "worker", 31, "error", false},
	{"worker_timeout", "worker", 32, "error", true},
	{"worker_rate_limited", "worker", 33, "error", true},
	{"worker_auth_failed", "worker", 34, "error", false},
	{"worker_not_found", "worker", 35, "error", false},
	{"no_progress", "stuck", 40, "guardrail", false},
	{"same_error_repeated", "stuck", 41, "guardrail", false},
	{"noop_streak", "stuck", 42, "guardrail", false},
	{"phase_loop", "stuck", 43, "guardrail", false},
	{"timeout", "resource_limit", 124, "guardrail", false},
	{"max_ticks", "resource_limit", 125, "guardrail", false},
	{"stalled", "resource_limit", 126, "guardrail", true},
	{"budget_exceeded", "resource_limit", 127, "guardrail", false},
	{"max_iterations", "resource_limit", 128, "guardrail", false},
	{"circuit_breaker", "resource_limit", 129, "guardrail", false},
	{"user_stopped", "user", 130, "guardrail", false},
	{"terminated", "user", 143, "guardrail", true},
	{"internal_error", "runr", 1, "error", false},
	{"usage_error", "runr", 64, "error", false},
	{"state_corrupt", "runr", 65, "error", false},
	{"run_not_found", "runr", 66, "error", false},
	{"environment_invalid", "runr", 69, "error", false},
	{"run_locked", "runr", 75, "error", false},
	{"config_invalid", "runr", 78, "error", false},
}

func TestRegistryMatchesContract(t *testing.T) {
	require.Len(t, All(), len(contract), "the registry has exactly the rows of DESIGN §3")
	for i, want := range contract {
		t.Run(string(want.code), func(t *testing.T) {
			got, ok := Lookup(want.code)
			require.True(t, ok)
			assert.Equal(t, want.family, got.Family)
			assert.Equal(t, want.exit, got.ExitCode)
			assert.Equal(t, want.category, got.Category)
			assert.Equal(t, want.auto, got.AutoResumable)
			assert.Equal(t, want.code, All()[i].Code, "registry order")
			assert.Equal(t, want.exit, ExitCode(want.code))
			assert.NotEmpty(t, got.Title)
			assert.NotEmpty(t, got.When)
			assert.NotEmpty(t, got.Diagnosis)
			assert.NotEmpty(t, got.NextActions)
		})
	}
}

func TestCodesAndExitCodesAreUnique(t *testing.T) {
	codes := map[Code]bool{}
	exits := map[int]Code{}
	for _, r := range All() {
		assert.False(t, codes[r.Code], "duplicate code %s", r.Code)
		codes[r.Code] = true
		if other, dup := exits[r.ExitCode]; dup {
			t.Errorf("exit code %d used by %s and %s", r.ExitCode, other, r.Code)
		}
		exits[r.ExitCode] = r.Code
	}
}

func TestFamiliesOwnTheirRanges(t *testing.T) {
	ranges := map[Family][2]int{
		FamilySuccess: {0, 0}, FamilyConstraint: {2, 6}, FamilyFailure: {10, 16}, FamilyReview: {20, 21},
		FamilyWorker: {30, 35}, FamilyStuck: {40, 43}, FamilyResourceLimit: {124, 129},
	}
	for _, r := range All() {
		if rg, ok := ranges[r.Family]; ok {
			assert.True(t, r.ExitCode >= rg[0] && r.ExitCode <= rg[1], "%s exit %d outside %v", r.Code, r.ExitCode, rg)
		}
	}
	seen := map[Family]bool{}
	for _, f := range Families {
		seen[f.Family] = true
		assert.NotEmpty(t, ByFamily(f.Family), "family %s has no reasons", f.Family)
	}
	for _, r := range All() {
		assert.True(t, seen[r.Family], "family %s of %s is not listed in Families", r.Family, r.Code)
	}
}

func TestUnknownCode(t *testing.T) {
	assert.Equal(t, 1, ExitCode("made_up_reason"))
	assert.False(t, AutoResumable("made_up_reason"))
	assert.False(t, Known("made_up_reason"))
	assert.Equal(t, AbortedError, TerminalStatus("made_up_reason", 3))
	assert.Equal(t, RunFailed, RunStatus("made_up_reason"))
}

func TestAutoResumableSetIsDerived(t *testing.T) {
	assert.ElementsMatch(t, []Code{WorkerTimeout, WorkerRateLimited, Stalled, Terminated}, AutoResumableSet())
}

func TestTerminalAndRunStatus(t *testing.T) {
	tests := []struct {
		code     Code
		approved int
		terminal string
		run      string
	}{
		{Complete, 2, DoneSuccess, RunCompleted},
		{GuardViolation, 1, AbortedConstraint, RunStopped},
		{WorkerAuthFailed, 1, AbortedError, RunFailed},
		{UserStopped, 1, AbortedUser, RunStopped},
		{Terminated, 0, AbortedUser, RunStopped},
		{Timeout, 1, DonePartial, RunStopped},
		{Timeout, 0, AbortedStuck, RunStopped},
		{SameErrorRepeated, 0, AbortedStuck, RunStopped},
		{Stalled, 2, DonePartial, RunStopped},
		{ConfigInvalid, 0, AbortedError, RunFailed},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.terminal, TerminalStatus(tt.code, tt.approved), "%s/%d", tt.code, tt.approved)
		assert.Equal(t, tt.run, RunStatus(tt.code), "%s", tt.code)
	}
}

func TestTemplatesParseAndRender(t *testing.T) {
	d := Details{RunID: "20261121T230017Z-3f9a1c", Value: "3", Threshold: "3", Milestone: 2, MilestoneGoal: "fix Add",
		Command: "go test ./...", Signature: "abc123", Files: []string{"a b.go"}, Grant: "30m", Condition: "same_error", Other: "20261121T230017Z-000000"}
	for _, r := range All() {
		_, err := template.New("").Funcs(funcs).Parse(r.Diagnosis)
		require.NoError(t, err, "%s diagnosis", r.Code)
		diag := r.Diagnose(d)
		assert.NotContains(t, diag, "template error", r.Code)
		assert.NotContains(t, diag, "<no value>", r.Code)
		for _, a := range r.NextActions {
			_, err := template.New("").Funcs(funcs).Parse(a)
			require.NoError(t, err, "%s next action %q", r.Code, a)
		}
		for _, a := range r.Actions(d) {
			assert.NotContains(t, a, "template error", r.Code)
		}
	}
}

func TestActionsLeaveOutCommandsMissingFigures(t *testing.T) {
	r := MustLookup(Timeout)
	acts := r.Actions(Details{})
	for _, a := range acts {
		assert.False(t, strings.HasPrefix(a, "runr resume"), "a resume without a run id must not be offered: %q", a)
	}
	acts = r.Actions(Details{RunID: "20261121T230017Z-3f9a1c", Grant: "30m"})
	assert.Contains(t, acts, "runr resume 20261121T230017Z-3f9a1c --time 30m")
}

// TestActionsLeaveOutAnEmptyStash: a guard stop whose files are all the
// run's own offers no stash at all.
func TestActionsLeaveOutAnEmptyStash(t *testing.T) {
	acts := MustLookup(GuardViolation).Actions(Details{RunID: "20261121T230017Z-3f9a1c", Files: []string{"runr.yaml"}})
	for _, a := range acts {
		assert.False(t, strings.HasPrefix(a, "git stash"), "%q", a)
	}
	assert.Contains(t, acts, "runr resume 20261121T230017Z-3f9a1c")
}

func TestShellQuote(t *testing.T) {
	assert.Equal(t, "src/a.go", ShellQuote("src/a.go"))
	assert.Equal(t, "'a b.go'", ShellQuote("a b.go"))
	assert.Equal(t, `'it'\''s'`, ShellQuote("it's"))
	assert.Equal(t, "''", ShellQuote(""))
	// A control character is never printed raw: the command stays one
	// line of printable text.
	assert.Equal(t, `"$(printf 'line\012break')"`, ShellQuote("line\nbreak"))
}

// TestShellQuoteRoundTrips hands each quoted name to sh, which must give
// back the name itself.
func TestShellQuoteRoundTrips(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a b", "it's", "odd$name", "line\nbreak", "tab\there", "-n\nx", "100%\n\\d", "q'\n'", "end\n", "\x7fdel", "bad\xffutf8\n"} {
		quoted := ShellQuote(name)
		assert.NotContains(t, quoted, "\n", "%q is quoted onto one line", name)
		if strings.HasSuffix(name, "\n") {
			// A trailing newline becomes a pattern: it matches the file.
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
		}
		cmd := exec.Command("sh", "-c", "printf '%s|' "+quoted)
		cmd.Dir = dir
		out, err := cmd.Output()
		require.NoError(t, err, quoted)
		want := name
		if strings.HasPrefix(name, "-") {
			want = "./" + name
		}
		assert.Equal(t, want+"|", string(out), "sh reads %s", quoted)
	}
}

func TestErrorsCarryTheirCode(t *testing.T) {
	err := Errorf(ConfigInvalid, "runr.yaml: stop.noop: -1 is below 0")
	assert.Equal(t, ConfigInvalid, CodeOf(err))
	wrapped := Wrap(StateCorrupt, err, "load %s", "state.json")
	assert.Equal(t, StateCorrupt, CodeOf(wrapped))
	assert.Equal(t, InternalError, CodeOf(assertErr("plain")))
	assert.Equal(t, Complete, CodeOf(nil))
	assert.Nil(t, Wrap(StateCorrupt, nil, "x"))
}

type assertErr string

func (e assertErr) Error() string { return string(e) }

func TestShowPathsQuotesWhatWouldBreakALine(t *testing.T) {
	assert.Equal(t, `a b.go, "evil\nsrc/ok.txt", "\xff.txt"`, ShowPaths([]string{"a b.go", "evil\nsrc/ok.txt", "\xff.txt"}))
}

func TestStopDetailsJSON(t *testing.T) {
	guard, err := json.Marshal(StopDetails{Files: []string{"a"}, Rules: []string{"scope.allow"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"files":["a"],"rules":["scope.allow"],"committed":[]}`, string(guard))
	committed, err := json.Marshal(StopDetails{Files: []string{"a"}, Rules: []string{"scope.allow"}, Committed: []string{"a"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"files":["a"],"rules":["scope.allow"],"committed":["a"]}`, string(committed))
	other, err := json.Marshal(StopDetails{Milestone: 2, Command: "go test"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"milestone":2,"command":"go test"}`, string(other))
	var back StopDetails
	require.NoError(t, json.Unmarshal(guard, &back))
	assert.Equal(t, []string{}, back.Committed)
}

// worker_rate_limited's diagnosis names the limit's kind and its reset.
func TestRateLimitDiagnosisNamesTheKind(t *testing.T) {
	r, ok := Lookup(WorkerRateLimited)
	require.True(t, ok)
	assert.Equal(t, "The agent hit a rate or usage limit.", r.Diagnose(Details{}))
	assert.Equal(t, "The agent hit a usage limit (a subscription's window); it resets at 2026-11-25T01:21:00Z.",
		r.Diagnose(Details{LimitKind: "usage_window", ResetAt: "2026-11-25T01:21:00Z"}))
	assert.Contains(t, r.Diagnose(Details{LimitKind: "spend_cap"}), "spend cap")
	assert.Contains(t, r.Diagnose(Details{LimitKind: "rate"}), "hit a rate limit")
}

// A diagnosis counts in the singular where a figure is one: "used its 1
// tick", never "1 ticks" or "1 file(s)".
func TestDiagnosesCountOneInTheSingular(t *testing.T) {
	plural := regexp.MustCompile(`\b1 ([a-z]+ )?[a-z]+[^s]s\b|\d+ [a-z]+\(s\)`)
	for _, r := range All() {
		d := r.Diagnose(Details{RunID: "r1", Value: "1", Threshold: "1", Total: 1, Approved: 1, Files: []string{"a.go"}, Milestone: 1, Condition: "x"})
		assert.False(t, plural.MatchString(d), "%s: %s", r.Code, d)
	}
	assert.Contains(t, MustLookup(MaxTicks).Diagnose(Details{Threshold: "1", Total: 3}), "used its 1 tick;")
	assert.Contains(t, MustLookup(MaxTicks).Diagnose(Details{Threshold: "200", Total: 3}), "used its 200 ticks;")
	assert.Contains(t, MustLookup(Complete).Diagnose(Details{Approved: 1, Total: 1}), "1 of 1 milestone approved")
}

// TestPlaceholderDataNamesEveryField: every field of Details has a
// placeholder, so no reason explained without a run shows a zero as if it
// were a run's figure.
func TestPlaceholderDataNamesEveryField(t *testing.T) {
	data := placeholderData()
	typ := reflect.TypeOf(Details{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		v, ok := data[name]
		require.True(t, ok, "placeholderData has no %s", name)
		if s, isString := v.(string); isString {
			assert.True(t, strings.HasPrefix(s, "<"), "%s: %q is not a placeholder", name, s)
		}
	}
	assert.Len(t, data, typ.NumField())
	for _, r := range All() {
		diag, acts := r.Explain()
		assert.NotContains(t, diag, "template error", r.Code)
		assert.NotContains(t, diag, "<no value>", r.Code)
		assert.NotRegexp(t, `\b0 of 0\b|[Mm]ilestone 0\b|tick 0\b`, diag, r.Code)
		for _, a := range acts {
			assert.NotContains(t, a, "template error", r.Code)
		}
	}
}

// A stop's details list at most MaxDetailFiles files, each with its rule,
// the committed files among them, and count the rest; the diagnosis counts
// them all and says how many it left out.
func TestStopDetailsBounded(t *testing.T) {
	var files, rules []string
	for i := range 250 {
		files = append(files, fmt.Sprintf("f%03d.txt", i))
		rules = append(rules, "scope.allow src/**")
	}
	d := StopDetails{Files: files, Rules: rules, Committed: []string{"f001.txt", "f200.txt"}}.Bounded()
	assert.Len(t, d.Files, MaxDetailFiles)
	assert.Len(t, d.Rules, MaxDetailFiles)
	assert.Equal(t, 150, d.FilesOmitted)
	assert.Equal(t, []string{"f001.txt"}, d.Committed)
	assert.Equal(t, "f000.txt", d.Files[0])
	again := d.Bounded()
	assert.Equal(t, d, again, "bounding twice changes nothing")
	small := StopDetails{Files: []string{"a"}, Rules: []string{"r"}}
	assert.Equal(t, small, small.Bounded())

	diag := MustLookup(GuardViolation).Diagnose(Details{Condition: "scope.allow", Files: d.Files, FilesOmitted: d.FilesOmitted})
	assert.Contains(t, diag, "changed 250 files")
	assert.True(t, strings.HasSuffix(diag, "f099.txt and 150 more."), diag)
	assert.Equal(t, "a, b", ShowFiles([]string{"a", "b"}, 0))
	shown, rest := FirstFiles(files)
	assert.Len(t, shown, MaxDetailFiles)
	assert.Equal(t, 150, rest)
}

// With more files than a stop lists, no stash command is offered, and no
// hint points at one.
func TestNoStashAdviceForFilesLeftOut(t *testing.T) {
	for _, tc := range []struct {
		code      Code
		condition string
	}{{DirtyWorktree, ""}, {GuardViolation, "protect"}, {GuardViolation, "scope.deny"}} {
		d := Details{RunID: "r1", Condition: tc.condition, Files: []string{"a.go"}, FilesOmitted: 150}
		acts := MustLookup(tc.code).Actions(d)
		for _, a := range acts {
			assert.NotContains(t, a, "stash below", "%s %s", tc.code, tc.condition)
			assert.False(t, strings.HasPrefix(a, "git stash"), "%s %s: %s", tc.code, tc.condition, a)
		}
		d.FilesOmitted, d.Stash = 0, []string{"a.go"}
		var stash bool
		for _, a := range MustLookup(tc.code).Actions(d) {
			stash = stash || strings.HasPrefix(a, "git stash push")
		}
		assert.True(t, stash, "%s %s: the listed files' stash is offered", tc.code, tc.condition)
	}
}
