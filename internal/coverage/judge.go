package coverage

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Verdict is how much of the milestone's change a verify run executed.
type Verdict struct {
	// Executable counts the changed lines judged: those a profile calls
	// executable, and the code lines of changed files of a profiled
	// language that no profile names. Run counts those that ran.
	Executable, Run int
	// Uncovered are the files with changed lines that did not run, in
	// path order, each with its lines as ranges.
	Uncovered []stopreasons.Uncovered
	// Notes are the profiles' problems, for the feedback.
	Notes []string
}

// Covered is the fraction of the judged lines that ran; 1 when there is
// none to judge.
func (v Verdict) Covered() float64 {
	if v.Executable == 0 {
		return 1
	}
	return float64(v.Run) / float64(v.Executable)
}

// Judge weighs the changed lines against the profiles. A line counts only
// where a profile says whether it is executable; a changed file that no
// profile names counts as not run (its code lines) when the profiles name
// other files of its language, or when no profile was read at all; test
// files, and files of no profiled language (docs, config), are left out.
func Judge(changed Changed, r Report) Verdict {
	v := Verdict{Notes: r.Notes}
	if r.Profiles == 0 {
		v.Notes = append(v.Notes, "no coverage profile was read: the verify commands must write one (e.g. go test -coverprofile=$"+DirVar+"/go.out ./...), under $"+DirVar+" or where verify.coverage.profiles says")
	}
	files := make([]string, 0, len(changed))
	for f := range changed {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		var missed []int
		if seen, named := r.lines[f]; named {
			for _, l := range changed[f] {
				ran, ok := seen[l.N]
				if !ok {
					continue
				}
				v.Executable++
				if ran {
					v.Run++
				} else {
					missed = append(missed, l.N)
				}
			}
		} else {
			lang := language(f)
			if lang == "" || testFile(f) || (r.Profiles > 0 && !r.langs[lang]) {
				continue
			}
			for _, l := range changed[f] {
				if codeLine(l.Text) {
					v.Executable++
					missed = append(missed, l.N)
				}
			}
		}
		if len(missed) > 0 {
			v.Uncovered = append(v.Uncovered, stopreasons.Uncovered{File: f, Lines: Ranges(missed)})
		}
	}
	return v
}

// Untested is the verdict as a stop's evidence, its file list bounded.
func (v Verdict) Untested(minChanged float64) *stopreasons.Untested {
	covered := math.Round(v.Covered()*10000) / 10000
	u := &stopreasons.Untested{Kind: stopreasons.UntestedCoverage, Covered: &covered, MinChanged: minChanged, Uncovered: v.Uncovered}
	if len(u.Uncovered) > stopreasons.MaxUncovered {
		u.UncoveredMore = len(u.Uncovered) - stopreasons.MaxUncovered
		u.Uncovered = u.Uncovered[:stopreasons.MaxUncovered]
	}
	return u
}

// Feedback is the verdict in words for the agent's next prompt: the
// figure, and each file and line range that no verify command ran.
func (v Verdict) Feedback(minChanged float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verify passed, but ran %d of the %d changed executable lines (%s), below verify.coverage.min_changed %s.\n",
		v.Run, v.Executable, Percent(v.Covered()), Percent(minChanged))
	if len(v.Uncovered) > 0 {
		b.WriteString("Changed lines that no verify command ran:\n")
		for i, u := range v.Uncovered {
			if i == stopreasons.MaxUncovered {
				fmt.Fprintf(&b, "  ... and %s\n", stopreasons.Count(len(v.Uncovered)-i, "more file", "more files"))
				break
			}
			fmt.Fprintf(&b, "  %s: lines %s\n", u.File, u.Lines)
		}
		b.WriteString("Add tests that call this code, so that the verify commands run it.\n")
	}
	for _, n := range v.Notes {
		b.WriteString("Note: " + n + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Percent shows a fraction 0..1 as a percentage with at most one decimal.
func Percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}

// Ranges writes sorted line numbers as ranges: 12,13,14,15,20 is
// "12-15,20".
func Ranges(lines []int) string {
	lines = slices.Clone(lines)
	slices.Sort(lines)
	lines = slices.Compact(lines)
	var parts []string
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] == lines[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(lines[i]))
		} else {
			parts = append(parts, strconv.Itoa(lines[i])+"-"+strconv.Itoa(lines[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
