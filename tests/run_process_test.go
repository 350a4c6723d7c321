package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// newRepo makes a committed git repository in a temp dir.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir = dir
		cmd.Env = testEnv(dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", a, out)
	}
	return dir
}

// runrProc is runr started in the background.
type runrProc struct {
	cmd      *exec.Cmd
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	done     chan struct{}
	ready    string
	repo     string
	exitCode int
}

func startRunr(t *testing.T, repo string, env []string, args ...string) *runrProc {
	t.Helper()
	p := &runrProc{done: make(chan struct{}), ready: filepath.Join(repo, ".git", "ready"), repo: repo}
	p.cmd = exec.Command(filepath.Join(binDir, "runr"), args...)
	p.cmd.Dir = repo
	p.cmd.Env = append(append(testEnv(repo), "FAKEAGENT_READY_FILE="+p.ready), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.cmd.Wait()
		p.exitCode = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		killRecordedGroups(repo)
	})
	return p
}

// waitReady polls until the agent wrote its ready line n times.
func (p *runrProc) waitReady(t *testing.T, n int) {
	t.Helper()
	p.waitLine(t, "FAKEAGENT READY", n)
}

// waitLine polls until the agent's ready file holds prefix n times, failing
// at once if runr exits first.
func (p *runrProc) waitLine(t *testing.T, prefix string, n int) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("%d× %q in the agent's ready file", n, prefix), func() bool {
		if testenv.FileCount(p.ready, prefix) >= n {
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("runr exited %d before the agent wrote %q\nstdout: %s\nstderr: %s", p.exitCode, prefix, &p.stdout, &p.stderr)
		default:
		}
		return false
	})
}

// wait waits at most limit for runr to exit and returns its exit code.
func (p *runrProc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.exitCode
	case <-time.After(limit):
		t.Fatalf("runr still running after %s\nstdout: %s\nstderr: %s", limit, &p.stdout, &p.stderr)
	}
	return -1
}

func (p *runrProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// killRecordedGroups cleans up after a test that SIGKILLed runr: any group
// the run recorded is killed so no test leaves processes behind.
func killRecordedGroups(repo string) {
	dir, err := latestRunDir(repo)
	if err != nil {
		return
	}
	timelines, _ := filepath.Glob(filepath.Join(dir, "workers", "w*", "runs", "*", "timeline.jsonl"))
	for _, tl := range append(timelines, filepath.Join(dir, "timeline.jsonl")) {
		for _, pg := range startedGroups(tl) {
			syscall.Kill(-pg, syscall.SIGKILL)
		}
	}
}

func readState(t *testing.T, repo string) map[string]any {
	t.Helper()
	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(b, &st), "state.json must parse")
	return st
}

func stopCode(st map[string]any) string {
	r, _ := st["stop_reason"].(map[string]any)
	s, _ := r["code"].(string)
	return s
}

func TestSignalsStopTheRunCleanly(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code string
		exit int
	}{
		{syscall.SIGINT, "user_stopped", 130},
		{syscall.SIGTERM, "terminated", 143},
		{syscall.SIGHUP, "terminated", 143},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=2s"}, "run", "--prompt", "work", "--",
				"fakeagent", "--do", "write wip.txt partial; ready; sleep 60s")
			p.waitReady(t, 1)
			p.signal(t, tc.sig)
			assert.Equal(t, tc.exit, p.wait(t, 30*time.Second), "stderr: %s", &p.stderr)
			dir, _ := latestRunDir(repo)
			require.NoError(t, checkStoppedRun(dir, []string{tc.code}))
			st := readState(t, repo)
			assert.Equal(t, "stopped", st["run_status"])
			assert.Nil(t, st["agent_process"], "no process is recorded as running after the stop")
		})
	}
}

func TestSecondSIGINTKillsTheAgentAtOnce(t *testing.T) {
	repo := newRepo(t)
	// The agent ignores SIGTERM and the grace is long: only the second
	// Ctrl+C can end it before the grace runs out.
	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=120s"}, "run", "--prompt", "work", "--",
		"fakeagent", "--do", "ignore-term; ready; hang")
	p.waitReady(t, 1)
	p.signal(t, syscall.SIGINT)
	// The agent notes the SIGTERM it ignores: the stop is under way, and
	// only a second SIGINT can end it now.
	p.waitLine(t, "FAKEAGENT TERM IGNORED", 1)
	p.signal(t, syscall.SIGINT)
	assert.Equal(t, 130, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	dir, _ := latestRunDir(repo)
	require.NoError(t, checkStoppedRun(dir, []string{"user_stopped"}))
}

func TestTimeoutStopsInsideTheTick(t *testing.T) {
	repo := newRepo(t)
	start := time.Now()
	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=1s"}, "run", "--prompt", "work", "--time", "2s", "--",
		"fakeagent", "--do", "ready; sleep 300s")
	code := p.wait(t, 60*time.Second)
	took := time.Since(start)
	assert.Equal(t, 124, code, "stderr: %s", &p.stderr)
	// The budget is 2s and kill_grace 1s: runr must not wait for the
	// agent's 300s sleep to end (the bound is loose for busy machines).
	assert.Less(t, took, 30*time.Second)
	dir, _ := latestRunDir(repo)
	require.NoError(t, checkStoppedRun(dir, []string{"timeout"}))
	st := readState(t, repo)
	assert.Less(t, st["elapsed_ms"].(float64), float64(30000))
}

func TestAgentIgnoringSIGTERMWithGrandchildHoldingStdout(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=1s"}, "run", "--prompt", "work", "--time", "3s", "--",
		"fakeagent", "--do", "grandchild 300s; ignore-term; ready; hang")
	assert.Equal(t, 124, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	dir, _ := latestRunDir(repo)
	require.NoError(t, checkStoppedRun(dir, []string{"timeout"}))
	b, _ := os.ReadFile(p.ready)
	assert.Contains(t, string(b), "FAKEAGENT GRANDCHILD", "the grandchild really started")
	// By runr's own clock the run ended within kill_grace + 1s of the
	// budget (3s), though the agent ignored SIGTERM: not at the next tick.
	st := readState(t, repo)
	t.Logf("elapsed_ms %v", st["elapsed_ms"])
	assert.LessOrEqual(t, st["elapsed_ms"].(float64), float64(3000+1000+1000), "elapsed_ms")
}

func TestBackgroundChildOfASuccessfulCallIsKilled(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--",
		"fakeagent", "--do", "background 300s; write out.txt done; status done")
	assert.Equal(t, 0, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	b, _ := os.ReadFile(p.ready)
	require.Contains(t, string(b), "FAKEAGENT BACKGROUND", "the background child really started")
	dir, _ := latestRunDir(repo)
	require.NoError(t, checkStoppedRun(dir, []string{"complete"}))
}

// TestFloodingAgentKeepsMemoryFlat: an agent's flood of output is written
// through to its log, never held in memory. agent.log_cap is raised above
// the flood so the log holds all of it; the cap's own test is the bench's
// output row and TestLogCapKeepsHeadAndTail.
func TestFloodingAgentKeepsMemoryFlat(t *testing.T) {
	size, sizeBytes := "256M", int64(256<<20)
	if testing.Short() {
		size, sizeBytes = "32M", 32<<20
	}
	repo := newRepo(t)
	p := startRunr(t, repo, []string{"RUNR_AGENT_LOG_CAP=1GiB"}, "run", "--prompt", "work", "--",
		"fakeagent", "--do", "flood "+size+"; print; status done")
	assert.Equal(t, 0, p.wait(t, 240*time.Second), "stderr: %s", &p.stderr)
	dir, _ := latestRunDir(repo)
	fi, err := os.Stat(filepath.Join(dir, "logs", "tick-0001-implement.log"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, fi.Size(), sizeBytes, "the log holds the whole output")
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	require.True(t, ok)
	// Maxrss is in KiB on Linux: runr's peak RSS stays under 64 MiB.
	assert.Less(t, ru.Maxrss, int64(64<<10), "peak RSS %d KiB", ru.Maxrss)
}

func TestStatusShowsLiveAndCrashedRuns(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--", "fakeagent", "--do", "ready; sleep 300s")
	p.waitReady(t, 1)
	assert.Equal(t, "running", statusOf(t, repo))
	require.NoError(t, p.cmd.Process.Kill())
	p.wait(t, 30*time.Second)
	assert.Equal(t, "crashed", statusOf(t, repo))
}

func statusOf(t *testing.T, repo string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), "status", "latest", "--json")
	cmd.Dir = repo
	cmd.Env = testEnv(repo)
	out, err := cmd.Output()
	require.NoError(t, err)
	var v struct{ Status string }
	require.NoError(t, json.Unmarshal(out, &v))
	return v.Status
}

// TestKill9NeverCorruptsState kills runr with SIGKILL at random moments of a
// run of many short ticks: state.json always parses and its tick never goes
// backwards. make test runs a few trials; make soak (RUNR_SOAK=1) many.
func TestKill9NeverCorruptsState(t *testing.T) {
	trials := 10
	if os.Getenv("RUNR_SOAK") == "1" {
		trials = 50
	}
	repo := newRepo(t)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("calls.txt\n"), 0o644)
	rng := testenv.Rand(t)
	for i := 0; i < trials; i++ {
		// Only the kill ends the run: no rule may stop it first, however
		// fast its ticks.
		p := startRunr(t, repo, []string{"RUNR_STOP_CIRCUIT_BREAKER=0", "RUNR_STOP_NO_PROGRESS=0", "RUNR_STOP_NOOP=0"}, "run", "--prompt", "loop", "--max-ticks", "100000", "--time", "10m", "--quiet", "--allow-dirty", "--",
			"fakeagent", "--do", "touch-count calls.txt; touch-count work.txt")
		// Wait for the run to exist, then let it tick for a random while,
		// reading state.json as it goes.
		var dir string
		testenv.WaitFor(t, fmt.Sprintf("trial %d: the run's state.json", i), func() bool {
			d, err := latestRunDir(repo)
			if err != nil || strings.HasSuffix(d, lastDir) {
				return false
			}
			_, err = os.Stat(filepath.Join(d, "state.json"))
			dir = d
			return err == nil
		})
		lastDir = filepath.Base(dir)
		last := -1
		deadline := time.Now().Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		for time.Now().Before(deadline) {
			tick := tickOf(t, dir)
			require.GreaterOrEqual(t, tick, last, "trial %d: tick went backwards", i)
			last = tick
		}
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL), "trial %d: runr ended before the kill\nstdout: %s\nstderr: %s", i, &p.stdout, &p.stderr)
		<-p.done
		tick := tickOf(t, dir)
		require.GreaterOrEqual(t, tick, last, "trial %d: tick went backwards after SIGKILL", i)
		killRecordedGroups(repo)
	}
}

var lastDir = "none"

func tickOf(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	require.NoError(t, err)
	var st struct {
		Tick *int `json:"tick"`
	}
	require.NoError(t, json.Unmarshal(b, &st), "state.json must always parse: %q", b)
	require.NotNil(t, st.Tick)
	return *st.Tick
}
