package supervisor

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/guard"
)

// measuresCoverage reports whether verify.coverage.min_changed asks for
// the changed lines to be judged.
func (s *Supervisor) measuresCoverage() bool { return s.cfg.Verify.Coverage.MinChanged > 0 }

// coverageDir is the run's coverage directory ($RUNR_COVERAGE_DIR): in the
// run dir, outside the work tree, so the profiles there never touch the
// agent's tree.
func (s *Supervisor) coverageDir() string {
	return coverageDirOf(s.store.RunDir(s.st.RunID))
}

// coverageDirOf is the coverage directory of the run in runDir.
func coverageDirOf(runDir string) string { return filepath.Join(runDir, "coverage") }

// CoverageEnv empties the coverage directory of the run in runDir for a
// verify outside a tick (a parallel run's merged tree) and returns the
// variable that names it to the verify commands.
func CoverageEnv(runDir string) (string, error) {
	src := coverage.Source{Dir: coverageDirOf(runDir)}
	if err := src.Clear(); err != nil {
		return "", err
	}
	return coverage.DirVar + "=" + src.Dir, nil
}

// profiles are where the verify commands write their coverage profiles.
func (s *Supervisor) profiles() coverage.Source {
	src := coverage.Source{WorkTree: s.dir, Dir: s.coverageDir(), Patterns: s.cfg.Verify.Coverage.Profiles}
	if s.snap != nil {
		// A file that was there when the run started is the person's,
		// whatever its name: never removed, never read as a profile.
		src.Keep = s.snap.Existed
	}
	return src
}

// objectName is what a git object id read back from state.json must look
// like before it is handed to git.
var objectName = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// markMilestoneStart records the tree the milestone starts from, before
// its first agent call, so that its changed lines can be told from those
// of earlier milestones. A failure to read it leaves it unrecorded: the
// changed lines are then judged from the run's last checkpoint.
func (s *Supervisor) markMilestoneStart(ctx context.Context) {
	if !s.measuresCoverage() || s.st.MilestoneIndex >= len(s.st.Milestones) {
		return
	}
	m := s.milestone()
	if objectName.MatchString(m.StartTree) {
		return
	}
	gctx, cancel := s.gitContext(ctx)
	defer cancel()
	if tree, err := guard.TreeHash(gctx, s.dir); err == nil {
		m.StartTree = tree
	}
}

// tested gathers what a verify whose commands all passed showed it
// tested: the test runners' counts from each command's output, and the
// milestone's changed lines weighed against the profiles the commands
// wrote.
func (s *Supervisor) tested(ctx context.Context, logPath string, checks []CheckFacts, profiles coverage.Source) (*TestedFacts, error) {
	t := &TestedFacts{Tests: coverage.Tests{Ran: map[string]int{}}}
	if s.cfg.Verify.RequireTests != config.RequireTestsOff {
		t.Tests = countTests(logPath, checks)
	}
	if !s.measuresCoverage() {
		return t, nil
	}
	from := s.milestone().StartTree
	if !objectName.MatchString(from) {
		from = s.st.GuardHead
	}
	gctx, cancel := s.gitContext(ctx)
	defer cancel()
	lines, cut, err := guard.AddedLines(gctx, s.dir, from)
	if err != nil {
		return nil, err
	}
	changed := coverage.Changed{}
	for f, ls := range lines {
		if coverage.IsProfile(f, profiles.Patterns) || f == s.o.TaskFile || f == s.configFile() {
			continue
		}
		for _, l := range ls {
			changed[f] = append(changed[f], coverage.Line{N: l.N, Text: l.Text})
		}
	}
	report := profiles.Read(changed)
	v := coverage.Judge(changed, report)
	if cut {
		v.Notes = append(v.Notes, "the milestone's change is larger than runr reads; only its first part was judged")
	}
	t.Coverage = &v
	return t, nil
}

// forgetProfiles removes the profiles verify wrote into the work tree once
// it ended, whether they were read or not. Profiles are runr's, not the agent's: gone from the tree,
// they are judged by no guard and counted in no tree hash, no-op streak or
// checkpoint commit. Those under $RUNR_COVERAGE_DIR stay for a person to
// read until the next verify.
func forgetProfiles(p coverage.Source) error {
	p.Dir = ""
	return p.Clear()
}

// maxSummaryScan is how much of the end of a verify's log is read for the
// test runners' summaries: far more than the tail kept in memory, so that
// go test's lines of the packages that ran tests are not lost behind many
// without tests.
const maxSummaryScan = 16 << 20

// countTests counts the tests the runners' summaries report in the verify
// step's log (every command's output, read as a stream from at most its
// last 16 MiB), or in the commands' tails when the log cannot be read.
func countTests(logPath string, checks []CheckFacts) coverage.Tests {
	// A log that kept only its head and tail (agent.log_cap) lacks what
	// its middle said.
	capped := false
	for _, c := range checks {
		capped = capped || c.Process.LogOmitted > 0
	}
	if f, err := os.OpenFile(logPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0); err == nil {
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			partial := capped
			if fi.Size() > maxSummaryScan {
				_, _ = f.Seek(fi.Size()-maxSummaryScan, io.SeekStart)
				partial = true
			}
			t := coverage.CountTestsIn(f)
			t.Partial = partial
			return t
		}
	}
	// Only the commands' tails, which hold a short output whole.
	t := coverage.Tests{Ran: map[string]int{}}
	for _, c := range checks {
		t.Partial = t.Partial || c.Process.Bytes > int64(len(c.Process.Tail))
		for runner, n := range coverage.CountTests(c.Process.Tail).Ran {
			t.Ran[runner] += n
		}
	}
	return t
}
