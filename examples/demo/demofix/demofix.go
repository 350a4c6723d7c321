// Package demofix knows the demo repository (examples/demo/repo) and the edits
// that complete each milestone of its TASK.md. The demo agent applies them one
// step per call, like an agent that learns from runr's feedback; the fake agent's
// fix-test action applies a whole milestone at once. Which steps are done is read
// from the files themselves, so the edits pick up where a stopped run left off.
package demofix

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A Step is one edit of one file of the demo repository.
type Step struct {
	// Says is what an agent would tell its user before making the edit.
	Says string
	File string
	// Old is the text the edit replaces; empty means the step creates File.
	Old string
	New string
}

// An Attempt is the steps an agent makes in one call.
type Attempt []Step

// A Milestone is one checklist item of the demo's TASK.md and the attempts
// that do it.
type Milestone struct {
	// Keyword is a word of the item's text that no other item has.
	Keyword  string
	Attempts []Attempt
}

// Milestones follows the order of the checklist in examples/demo/repo/TASK.md.
var Milestones = []Milestone{
	{
		Keyword: "Mean",
		// The first attempt fixes only the bug the panic shows; the failure
		// runr feeds back then points at the second.
		Attempts: []Attempt{
			{{
				Says: "TestMean panics with an integer divide by zero: Mean divides by len(xs) even when xs is empty. Adding a guard that returns 0.",
				File: "stats.go",
				Old:  "func Mean(xs []int) float64 {\n\tsum := 0\n",
				New:  "func Mean(xs []int) float64 {\n\tif len(xs) == 0 {\n\t\treturn 0\n\t}\n\tsum := 0\n",
			}},
			{{
				Says: "Mean divides two ints, so the fraction is lost before the conversion to float64. Converting both operands first.",
				File: "stats.go",
				Old:  "return float64(sum / len(xs))",
				New:  "return float64(sum) / float64(len(xs))",
			}},
		},
	},
	{
		Keyword: "Max",
		Attempts: []Attempt{{
			{
				Says: "Adding Max in max.go.",
				File: "max.go",
				New: `package stats

// Max returns the largest element of xs; ok is false when xs is empty.
func Max(xs []int) (max int, ok bool) {
	for i, x := range xs {
		if i == 0 || x > max {
			max = x
		}
	}
	return max, len(xs) > 0
}
`,
			},
			{
				Says: "Adding a table test for Max in max_test.go, including the empty slice.",
				File: "max_test.go",
				New: `package stats

import "testing"

func TestMax(t *testing.T) {
	tests := []struct {
		name   string
		xs     []int
		want   int
		wantOK bool
	}{
		{"empty", nil, 0, false},
		{"one", []int{7}, 7, true},
		{"first", []int{9, 2, 5}, 9, true},
		{"last", []int{-4, -2}, -2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Max(tt.xs)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Max(%v) = %v, %v, want %v, %v", tt.xs, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
`,
			},
		}},
	},
}

// Find returns the milestone whose keyword occurs in goal, else the number-th
// milestone (1-based), as runr passes them in RUNR_MILESTONE_GOAL and
// RUNR_MILESTONE.
func Find(goal string, number int) (Milestone, error) {
	for _, m := range Milestones {
		if goal != "" && strings.Contains(goal, m.Keyword) {
			return m, nil
		}
	}
	if number >= 1 && number <= len(Milestones) {
		return Milestones[number-1], nil
	}
	return Milestone{}, fmt.Errorf("the demo has no milestone %d (goal %q): it knows %d milestones, see examples/demo/repo/TASK.md", number, goal, len(Milestones))
}

// Done reports whether the step's edit is already in the repository at dir.
func (s Step) Done(dir string) (bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, s.File))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.Contains(string(data), s.New), nil
}

// Apply makes the step's edit in the repository at dir.
func (s Step) Apply(dir string) error {
	path := filepath.Join(dir, s.File)
	if s.Old == "" {
		return os.WriteFile(path, []byte(s.New), 0o644)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), s.Old) {
		return fmt.Errorf("%s does not hold the text this step replaces (%q): the file differs from the demo's, recreate the repository with examples/demo/setup.sh", path, s.Old)
	}
	return os.WriteFile(path, []byte(strings.Replace(string(data), s.Old, s.New, 1)), 0o644)
}

// Next returns the first attempt of m with a step not yet done in the
// repository at dir; ok is false when every step is done.
func (m Milestone) Next(dir string) (attempt Attempt, ok bool, err error) {
	for _, a := range m.Attempts {
		for _, s := range a {
			done, err := s.Done(dir)
			if err != nil {
				return nil, false, err
			}
			if !done {
				return a, true, nil
			}
		}
	}
	return nil, false, nil
}

// Complete applies every step of m not yet done in the repository at dir and
// returns the steps it applied.
func (m Milestone) Complete(dir string) ([]Step, error) {
	var applied []Step
	for _, a := range m.Attempts {
		for _, s := range a {
			done, err := s.Done(dir)
			if err != nil {
				return applied, err
			}
			if done {
				continue
			}
			if err := s.Apply(dir); err != nil {
				return applied, err
			}
			applied = append(applied, s)
		}
	}
	return applied, nil
}
