package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runr-dev/runr/tests/testenv"
)

// The kill -9 campaign: runr works through a three-milestone task (implement,
// verify, review, checkpoint commit, three times over) and is killed with
// SIGKILL at a random instant; `runr resume` must then finish the run. After
// each trial:
//
//	created     a run dir that exists holds a state.json (none exists when
//	            runr was killed before creating the run)
//	state       that state.json parses and has its run_id
//	resume      `runr resume latest` then exits 0
//	complete    and the run is completed, every milestone approved
//	orphans     no process of any group the run started is alive, nor any
//	            agent process (pids from the fake agent's ready file)
//	temps       no temporary file of an atomic write is left in the store
//
// `make test` runs soakFastTrials trials, `make soak` (RUNR_SOAK=1)
// RUNR_SOAK_TRIALS (default 1000); both hold them to every invariant. Every failing trial
// is reported with its number and instant; RUNRTEST_SEED replays the
// campaign's instants.
const (
	soakFastTrials = 20
	soakTrials     = 1000
)

var soakInvariants = []string{"created", "state", "resume", "complete", "orphans", "temps"}

const soakConfig = `agent:
  kind: command
  command: [fakeagent, --do, "ready; background 3s; touch-count work.txt; sleep 10ms; status done"]
verify:
  commands: ["sleep 0.02; test -s work.txt"]
review:
  command: [sh, -c, "sleep 0.02"]
checkpoint:
  commit: true
budget:
  time: 10m
`

const soakTask = "# Soak\n\n- [ ] one\n- [ ] two\n- [ ] three\n"

// soakTrial is what one trial saw.
type soakTrial struct {
	n        int
	instant  time.Duration
	phase    string // the phase state.json shows after the kill ("" when no state)
	finished bool   // runr had exited before the kill
	failures map[string]string
}

func TestSoakKill9(t *testing.T) {
	trials, checked := soakFastTrials, soakInvariants
	if os.Getenv("RUNR_SOAK") == "1" {
		trials = soakTrials
		if s := os.Getenv("RUNR_SOAK_TRIALS"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				t.Fatalf("RUNR_SOAK_TRIALS=%q is not a positive number of trials", s)
			}
			trials = n
		}
	}
	rng := testenv.Rand(t)
	root := t.TempDir()

	// One run without a kill: the setup works, and its length is the span
	// the kill instants are drawn from, whatever this machine's speed.
	base := soakRepo(t, root, "baseline")
	start := time.Now()
	if code, out := soakRunr(base, "run", "--task", "TASK.md", "--quiet"); code != 0 {
		t.Fatalf("the uninterrupted run exits %d, not 0:\n%s", code, out)
	}
	span := time.Since(start) * 11 / 10
	t.Logf("an uninterrupted run takes %s; kills fall in [0, %s)", span*10/11, span)

	var results []soakTrial
	for i := range trials {
		results = append(results, soakOne(t, root, i, time.Duration(rng.Int64N(int64(span)))))
	}

	fails := map[string]int{}
	phases := map[string]int{}
	failed := 0
	for _, r := range results {
		phase := r.phase
		if r.finished {
			phase = "after the end"
		} else if phase == "" {
			phase = "before state.json"
		}
		phases[phase]++
		if len(r.failures) == 0 {
			continue
		}
		failed++
		var what []string
		for _, inv := range soakInvariants {
			if msg, ok := r.failures[inv]; ok {
				fails[inv]++
				what = append(what, inv+": "+msg)
			}
		}
		t.Logf("trial %d (kill at %s, phase %q) broke %s", r.n, r.instant, phase, strings.Join(what, "; "))
	}
	t.Logf("%d trials, kill instants by phase: %v", trials, sortedCounts(phases))
	t.Logf("%d trials broke an invariant; by invariant: %v", failed, sortedCounts(fails))
	for _, inv := range checked {
		if fails[inv] > 0 {
			t.Errorf("invariant %q broke in %d of %d trials (see the trials above)", inv, fails[inv], trials)
		}
	}
}

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// soakRepo makes a repository with the config and task committed.
func soakRepo(t *testing.T, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"runr.yaml": soakConfig, "TASK.md": soakTask, ".gitignore": ".home/\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir = dir
		cmd.Env = testEnv(dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	return dir
}

func soakEnv(repo string) []string {
	return append(testEnv(repo), "FAKEAGENT_READY_FILE="+filepath.Join(repo, ".git", "agents"))
}

func soakRunr(repo string, args ...string) (int, string) {
	cmd := exec.Command(filepath.Join(binDir, "runr"), args...)
	cmd.Dir = repo
	cmd.Env = soakEnv(repo)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		return -1, err.Error()
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

func soakOne(t *testing.T, root string, n int, instant time.Duration) soakTrial {
	t.Helper()
	r := soakTrial{n: n, instant: instant, failures: map[string]string{}}
	repo := soakRepo(t, root, fmt.Sprintf("trial-%04d", n))
	defer func() {
		// The processes a failing trial left are reported, then ended, so
		// they do not disturb the next trial.
		killRecordedGroups(repo)
		for _, pid := range readyPids(repo) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(r.failures) == 0 {
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
		r.finished = true
	case <-time.After(instant):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}

	runs := filepath.Join(repo, ".git", "runr", "runs")
	all, _ := os.ReadDir(runs)
	var entries []os.DirEntry
	for _, e := range all {
		// A run being created lives under a hidden name until it is whole.
		if !strings.HasPrefix(e.Name(), ".") {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		// Killed before the run existed: nothing to resume, and what a
		// half-made run left is gone after the next status.
		soakRunr(repo, "status")
		if left, _ := filepath.Glob(filepath.Join(runs, ".*")); len(left) > 0 {
			r.failures["temps"] = "left after status: " + filepath.Base(left[0])
		}
		return r
	}
	dir := filepath.Join(runs, entries[0].Name())
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	var st struct {
		RunID string `json:"run_id"`
		Phase string `json:"phase"`
	}
	if err != nil {
		// A run dir without its first state.json: nothing to resume from.
		r.failures["created"] = "the run dir has no state.json: " + err.Error()
	} else {
		if json.Unmarshal(b, &st) != nil || st.RunID == "" {
			r.failures["state"] = fmt.Sprintf("state.json does not parse: %.200q", b)
		}
		r.phase = st.Phase
		if code, out := soakRunr(repo, "resume", "latest", "--quiet"); code != 0 {
			r.failures["resume"] = fmt.Sprintf("exit %d: %s", code, lastLine(out))
		}
		if msg := soakCompleted(dir); msg != "" {
			r.failures["complete"] = msg
		}
	}
	if left := soakOrphans(repo, dir); len(left) > 0 {
		r.failures["orphans"] = "alive: " + strings.Join(left, ", ")
	}
	temps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	active, _ := filepath.Glob(filepath.Join(repo, ".git", "runr", "active", ".tmp-*"))
	if temps = append(temps, active...); len(temps) > 0 {
		for i := range temps {
			temps[i] = filepath.Base(temps[i])
		}
		r.failures["temps"] = strings.Join(temps, ", ")
	}
	return r
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// soakCompleted says what is wrong with the run's end, "" when it completed
// with every milestone approved.
func soakCompleted(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return err.Error()
	}
	var st struct {
		RunStatus  string `json:"run_status"`
		Milestones []struct {
			Status string `json:"status"`
		} `json:"milestones"`
		StopReason struct {
			Code string `json:"code"`
		} `json:"stop_reason"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return "state.json does not parse after the resume"
	}
	if st.RunStatus != "completed" {
		return fmt.Sprintf("run_status %q, stop %q", st.RunStatus, st.StopReason.Code)
	}
	for i, m := range st.Milestones {
		if m.Status != "approved" {
			return fmt.Sprintf("completed, but milestone %d is %q", i+1, m.Status)
		}
	}
	return ""
}

var readyPid = regexp.MustCompile(`pid=(\d+)`)

// readyPids are the agent processes the run started, from the fake agent's
// ready file.
func readyPids(repo string) []int {
	b, _ := os.ReadFile(filepath.Join(repo, ".git", "agents"))
	var out []int
	for _, m := range readyPid.FindAllStringSubmatch(string(b), -1) {
		if pid, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// soakOrphans lists what is still alive of the run's processes: members of
// the groups its timeline recorded and the agents that said they were
// ready. A process killed a moment ago may take that moment to go.
func soakOrphans(repo, dir string) []string {
	var left []string
	testenv.Poll(2*time.Second, func() bool {
		left = nil
		for _, pg := range startedGroups(filepath.Join(dir, "timeline.jsonl")) {
			for _, pid := range groupMembers(pg) {
				left = append(left, fmt.Sprintf("pid %d of group %d", pid, pg))
			}
		}
		for _, pid := range readyPids(repo) {
			if testenv.ProcessAlive(pid) {
				left = append(left, fmt.Sprintf("agent pid %d", pid))
			}
		}
		slices.Sort(left)
		left = slices.Compact(left)
		return len(left) == 0
	})
	return left
}
