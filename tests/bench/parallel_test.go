package bench

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	parallelMilestones = 6
	parallelWorkers    = 3
	parallelRatio      = 0.45
)

// parallelAgent takes about 3 s per call and writes its milestone's own file.
var parallelAgent = []string{"sh", "-c", `cat >/dev/null; sleep 3; echo "step $RUNR_MILESTONE" > "step$RUNR_MILESTONE.txt"; echo "RUNR_STATUS: done"`}

// parallel times a task of six independent milestones with --parallel 3
// against the sequential run of the same task (--worktree, so that both
// leave their result on a branch), in one invocation, and checks that both
// end with the same tree.
func (b *bench) parallel(t *testing.T) {
	one := func(id string, extra ...string) (time.Duration, string) {
		repo, home := b.repo(t)
		file := filepath.Join(filepath.Dir(repo), "task.md")
		writeFile(t, file, milestones(parallelMilestones), 0o644)
		argv := append([]string{b.runr, "run", "--run-id", id, "--task", file, "--verify", "true", "--quiet"}, extra...)
		argv = append(append(argv, "--"), parallelAgent...)
		p := run(t, repo, b.env(home), nil, argv...)
		mustExit(t, p, 0, "runr "+id)
		cmd := exec.Command(b.git, "rev-parse", "runr/"+id+"^{tree}")
		cmd.Dir, cmd.Env = repo, b.env(home)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git rev-parse runr/%s: %v", id, err)
		}
		return p.wall, strings.TrimSpace(string(out))
	}
	seq, seqTree := one("sequential", "--worktree")
	par, parTree := one("parallel", "--parallel", fmt.Sprint(parallelWorkers))
	if seqTree != parTree {
		t.Errorf("the parallel run's tree %s differs from the sequential run's %s", parTree, seqTree)
	}
	ratio := float64(par) / float64(seq)
	report(t, row{
		Figure:   fmt.Sprintf("%d independent milestones, agent ~3 s a call: --parallel %d vs sequential, same tree", parallelMilestones, parallelWorkers),
		Runr:     ms(par),
		Baseline: ms(seq),
		Ratio:    fmt.Sprintf("%.2fx", ratio),
		Target:   fmt.Sprintf("≤ %.2fx", parallelRatio),
		Met:      ratio <= parallelRatio && seqTree == parTree,
	})
}
