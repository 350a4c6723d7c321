package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runr-dev/runr/tests/testenv"
)

// The kill -9 campaign on parallel runs: three workers work a task of two
// groups (three milestones, then one), each milestone merged into the
// integration branch and verified there, and runr is killed with SIGKILL at
// a random instant; `runr resume` must then finish the run. After each
// trial, besides the invariants of TestSoakKill9 (created, state, resume,
// complete, orphans, counting the workers' groups too):
//
//	once       no milestone's Runr-Milestone trailer is on the integration
//	           branch twice: a merge is never made twice
//	worktrees  no worktree of the run is left, and git lists none
//
// `make test` runs parallelSoakFastTrials trials, `make soak` (RUNR_SOAK=1)
// RUNR_SOAK_PARALLEL_TRIALS (default 300). RUNRTEST_SEED replays the instants.
const (
	parallelSoakFastTrials = 4
	parallelSoakTrials     = 300
)

var parallelSoakInvariants = []string{"created", "state", "resume", "complete", "once", "orphans", "worktrees"}

const parallelSoakConfig = `agent:
  kind: command
  command: [fakeagent, --do, "ready; background 3s", --do, "m1: write one.txt 1", --do, "m2: write two.txt 2", --do, "m3: write three.txt 3", --do, "m4: write four.txt 4", --do, "sleep 20ms; status done"]
verify:
  commands: ["sleep 0.02; test -s base.txt"]
parallel:
  workers: 3
budget:
  time: 10m
`

const parallelSoakTask = "# Soak\n\n## First\n- [ ] one\n- [ ] two\n- [ ] three\n\n## Then\n- [ ] four\n"

func TestSoakParallelKill9(t *testing.T) {
	trials := parallelSoakFastTrials
	if testing.Short() {
		t.Skip("a campaign of real runs")
	}
	if os.Getenv("RUNR_SOAK") == "1" {
		trials = parallelSoakTrials
		if s := os.Getenv("RUNR_SOAK_PARALLEL_TRIALS"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				t.Fatalf("RUNR_SOAK_PARALLEL_TRIALS=%q is not a positive number of trials", s)
			}
			trials = n
		}
	}
	rng := testenv.Rand(t)
	root := t.TempDir()
	base := parallelSoakRepo(t, root, "baseline")
	start := time.Now()
	if code, out := soakRunr(base, "run", "--task", "TASK.md", "--quiet"); code != 0 {
		t.Fatalf("the uninterrupted run exits %d, not 0:\n%s", code, out)
	}
	span := time.Since(start) * 11 / 10
	t.Logf("an uninterrupted parallel run takes %s; kills fall in [0, %s)", span*10/11, span)

	fails := map[string]int{}
	for i := range trials {
		instant := time.Duration(rng.Int64N(int64(span)))
		failures := parallelSoakOne(t, root, i, instant)
		for _, inv := range parallelSoakInvariants {
			if msg, ok := failures[inv]; ok {
				fails[inv]++
				t.Logf("trial %d (kill at %s) broke %s: %s", i, instant, inv, msg)
			}
		}
	}
	t.Logf("%d trials; broken invariants: %v", trials, sortedCounts(fails))
	for _, inv := range parallelSoakInvariants {
		if fails[inv] > 0 {
			t.Errorf("invariant %q broke in %d of %d trials (see the trials above)", inv, fails[inv], trials)
		}
	}
}

func parallelSoakRepo(t *testing.T, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"runr.yaml": parallelSoakConfig, "TASK.md": parallelSoakTask, "base.txt": "base\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}} {
		if out, err := gitIn(dir, a...); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	return dir
}

func gitIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testEnv(dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func parallelSoakOne(t *testing.T, root string, n int, instant time.Duration) map[string]string {
	t.Helper()
	failures := map[string]string{}
	repo := parallelSoakRepo(t, root, fmt.Sprintf("ptrial-%04d", n))
	defer func() {
		killRecordedGroups(repo)
		for _, pid := range readyPids(repo) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(failures) == 0 {
			os.RemoveAll(repo)
		}
	}()
	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--task", "TASK.md", "--quiet")
	cmd.Dir = repo
	cmd.Env = soakEnv(repo)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(instant):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
	dir, err := latestRunDir(repo)
	if err != nil {
		return failures // killed before the run existed
	}
	id := filepath.Base(dir)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
		failures["created"] = "the run dir has no state.json"
		return failures
	}
	if code, out := soakRunr(repo, "resume", "latest", "--quiet"); code != 0 {
		failures["resume"] = fmt.Sprintf("exit %d: %s", code, lastLine(out))
	}
	if msg := soakCompleted(dir); msg != "" {
		failures["complete"] = msg
	}
	out, _ := gitIn(repo, "log", "--format=%B", "runr/"+id)
	for m := 1; m <= 4; m++ {
		if c := strings.Count(out, fmt.Sprintf("Runr-Milestone: %d\n", m)); c != 1 {
			failures["once"] = fmt.Sprintf("milestone %d's trailer is on runr/%s %d times", m, id, c)
		}
	}
	if left := parallelOrphans(repo, dir); len(left) > 0 {
		failures["orphans"] = "alive: " + strings.Join(left, ", ")
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "runr", "worktrees", id)); err == nil {
		failures["worktrees"] = "worktrees/" + id + " is left"
	}
	if list, _ := gitIn(repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		failures["worktrees"] = "git lists more than the checkout: " + list
	}
	return failures
}

// parallelOrphans lists what is alive of the groups the run and its
// workers recorded, and of the agents that said they were ready.
func parallelOrphans(repo, dir string) []string {
	timelines, _ := filepath.Glob(filepath.Join(dir, "workers", "w*", "runs", "*", "timeline.jsonl"))
	timelines = append(timelines, filepath.Join(dir, "timeline.jsonl"))
	var left []string
	testenv.Poll(2*time.Second, func() bool {
		left = nil
		for _, tl := range timelines {
			for _, pg := range startedGroups(tl) {
				for _, pid := range groupMembers(pg) {
					left = append(left, fmt.Sprintf("pid %d of group %d", pid, pg))
				}
			}
		}
		for _, pid := range readyPids(repo) {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				left = append(left, fmt.Sprintf("agent pid %d", pid))
			}
		}
		return len(left) == 0
	})
	return left
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
