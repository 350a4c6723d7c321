package guard

import "fmt"

// RunBranch is the branch of a run's own worktree: the --worktree run's
// checkout, and a parallel run's integration branch.
func RunBranch(runID string) string { return "runr/" + runID }

// MilestoneBranch is the branch a parallel run's worker implements a
// milestone on (1-based). It sits beside RunBranch, not below it: git
// cannot hold a ref below another ref's name.
func MilestoneBranch(runID string, milestone int) string {
	return fmt.Sprintf("%s-m%d", RunBranch(runID), milestone)
}
