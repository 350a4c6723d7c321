package tests

import (
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

// seRunsDir is the runs/ directory of the store of the repository at dir.
func seRunsDir(dir string) string { return filepath.Join(dir, ".git", "runr", "runs") }

// seStoppedRun makes a run that stopped on its iteration budget after one
// agent call, resumable with --max-iterations 1, and returns its directory.
func seStoppedRun(t *testing.T) (repo, runDir string) {
	t.Helper()
	repo = resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	code, stdout, stderr := resRunr(t, repo, nil, "run", "--task", "TASK.md", "--max-iterations", "1", "--quiet", "--",
		"fakeagent", "--do", "print hi")
	require.Equal(t, 128, code, "%s\n%s", stdout, stderr)
	return repo, resRunDir(t, repo)
}

// seEditState rewrites one top-level field of the run's state.json, as a
// damaged or hand-edited file would have it.
func seEditState(t *testing.T, runDir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(runDir, "state.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(data, &st))
	edit(st)
	data, err = json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// seDeadPID is the pid of a process that has exited.
func seDeadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// A runr killed with SIGKILL the moment its new run shows in runs/ leaves a
// whole run: state.json and config.json are there, so it can be resumed
// with its own settings. A half-made run left under the hidden creation
// name is not listed and is removed by the next status.
func TestStateEdgeRunIsVisibleOnlyWhole(t *testing.T) {
	repo := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	runs := seRunsDir(repo)
	seen := map[string]bool{}
	const trials = 8
	for trial := range trials {
		cmd, _, stderr := resRunrCmd(repo, nil, "run", "--task", "TASK.md", "--verify", "true", "--quiet", "--",
			"fakeagent", "--do", "hang")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		// A tight poll, not testenv.WaitFor: the point is to kill runr in
		// the instant the run appears.
		var id string
		deadline := time.Now().Add(testenv.WaitLimit)
		for id == "" {
			entries, _ := os.ReadDir(runs)
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), ".") && !seen[e.Name()] {
					id = e.Name()
				}
			}
			require.True(t, time.Now().Before(deadline), "trial %d: no run appeared in %s\n%s", trial, runs, stderr)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		killRecordedGroups(repo)
		seen[id] = true
		for _, f := range []string{"state.json", "config.json"} {
			assert.FileExists(t, filepath.Join(runs, id, f), "trial %d: run %s was visible without %s", trial, id, f)
		}
		var cfg struct {
			Verify struct {
				Commands []string `json:"commands"`
			} `json:"verify"`
		}
		if data, err := os.ReadFile(filepath.Join(runs, id, "config.json")); err == nil {
			require.NoError(t, json.Unmarshal(data, &cfg))
			assert.Equal(t, []string{"true"}, cfg.Verify.Commands, "trial %d: config.json keeps --verify", trial)
		}
	}

	// What a runr killed before the rename leaves: not a run, and gone
	// after the next status since its creator is dead.
	half := filepath.Join(runs, fmt.Sprintf(".creating-20260101T000000Z-abcdef-%d", seDeadPID(t)))
	require.NoError(t, os.MkdirAll(filepath.Join(half, "logs"), 0o755))
	code, stdout, stderr := resRunr(t, repo, nil, "status", "--json")
	require.Equal(t, 0, code, stderr)
	var views []struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &views))
	assert.Len(t, views, trials, "only the whole runs are listed")
	assert.NoDirExists(t, half, "status removes a half-made run whose creator is dead")
}

// The run's lock and store files are close-on-exec: an agent, and a child
// it leaves behind, hold none of them, so once runr is SIGKILLed the run
// shows crashed even while they live on.
func TestStateEdgeAgentChildrenDoNotHoldTheRun(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--", "fakeagent", "--do", "background 300s; ready; sleep 300s")
	p.waitReady(t, 1)
	agent := pidAfter(t, p.ready, "FAKEAGENT READY pid=")
	child := pidAfter(t, p.ready, "FAKEAGENT BACKGROUND pid=")
	store := filepath.Join(repo, ".git", "runr")
	for _, pid := range []int{agent, child} {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Skipf("no /proc to look at open files: %v", err)
		}
		for _, fd := range fds {
			target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			assert.False(t, strings.HasPrefix(target, store), "process %d inherited fd %s: %s", pid, fd.Name(), target)
		}
	}
	require.NoError(t, p.cmd.Process.Kill())
	p.wait(t, 30*time.Second)
	require.True(t, testenv.ProcessAlive(agent), "the agent outlives the killed runr")
	require.True(t, testenv.ProcessAlive(child), "the agent's child outlives the killed runr")
	assert.Equal(t, "crashed", statusOf(t, repo))
}

func pidAfter(t *testing.T, file, prefix string) int {
	t.Helper()
	line := testenv.WaitForLine(t, file, prefix)
	var pid int
	_, err := fmt.Sscanf(strings.TrimPrefix(line, prefix), "%d", &pid)
	require.NoError(t, err, "line %q", line)
	return pid
}

// Temporary files of writes cut short by SIGKILL, and run directories that
// hold nothing but logs/, are cleaned: by status once they are a minute
// old, and by the resume of their run at once.
func TestStateEdgeLeftoversAreCleaned(t *testing.T) {
	repo, runDir := seStoppedRun(t)
	runs := seRunsDir(repo)
	old := time.Now().Add(-time.Hour)
	plant := func(path string, when time.Time) string {
		require.NoError(t, os.WriteFile(path, []byte(`{"half":`), 0o600))
		require.NoError(t, os.Chtimes(path, when, when))
		return path
	}
	staleTemp := plant(filepath.Join(runDir, ".tmp-state.json-1111"), old)
	freshTemp := plant(filepath.Join(runDir, ".tmp-state.json-2222"), time.Now())
	logsOnly := filepath.Join(runs, "20260101T000000Z-0a0b0c")
	require.NoError(t, os.MkdirAll(filepath.Join(logsOnly, "logs"), 0o755))
	require.NoError(t, os.Chtimes(logsOnly, old, old))
	// A run directory without state.json that holds more than logs/ is a
	// person's to look at: status reports it and leaves it.
	other := filepath.Join(runs, "20260101T000001Z-0d0e0f")
	require.NoError(t, os.MkdirAll(other, 0o755))
	plant(filepath.Join(other, "timeline.jsonl"), old)
	require.NoError(t, os.Chtimes(other, old, old))

	code, stdout, stderr := resRunr(t, repo, nil, "status", "--json")
	require.Equal(t, 0, code, stderr)
	assert.NoFileExists(t, staleTemp, "status removes an old temporary file of a run no one holds")
	assert.FileExists(t, freshTemp, "status leaves a temporary file that may still be written")
	assert.NoDirExists(t, logsOnly, "status removes an old run directory holding only logs/")
	assert.DirExists(t, other)
	assert.Contains(t, stdout, `"status": "unreadable"`)

	code, stdout, stderr = resRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
	require.Equal(t, 128, code, "%s\n%s", stdout, stderr)
	assert.NoFileExists(t, freshTemp, "the resume of the run removes its temporary files")
}

// A run reference that is empty is a usage error, not the list; a
// state.json holding values no runr writes is state_corrupt, naming the
// field, for status, doctor and resume alike.
func TestStateEdgeBadInput(t *testing.T) {
	repo, runDir := seStoppedRun(t)
	id := filepath.Base(runDir)

	code, _, stderr := resRunr(t, repo, nil, "status", "")
	assert.Equal(t, 64, code, "runr status '': %s", stderr)
	assert.Contains(t, stderr, "run id is empty")

	for _, c := range []struct {
		field string
		value any
		want  string
	}{
		{"milestone_index", 99, "milestone_index 99 is beyond the 1 milestones"},
		{"tick", -3, "tick -3 is negative"},
		{"counters", map[string]any{"noop": -1}, "counters.noop -1 is negative"},
		{"phase", "dancing", `phase "dancing" is not a phase`},
		{"resume_from", map[string]any{"milestone": 7, "phase": "implement"}, "resume_from.milestone 7 is outside the milestones 1..1"},
	} {
		data, err := os.ReadFile(filepath.Join(runDir, "state.json"))
		require.NoError(t, err)
		seEditState(t, runDir, func(st map[string]any) { st[c.field] = c.value })
		for _, args := range [][]string{{"status", id}, {"doctor", id}, {"resume", id, "--max-iterations", "1"}} {
			code, stdout, stderr := resRunr(t, repo, nil, args...)
			assert.Equal(t, 65, code, "%s with %s=%v: %s%s", args[0], c.field, c.value, stdout, stderr)
			assert.Contains(t, stderr, c.want, "%s names the field", args[0])
			assert.Contains(t, stderr, "state.json")
		}
		require.NoError(t, os.WriteFile(filepath.Join(runDir, "state.json"), data, 0o644))
	}
}

// status and doctor only read the store, so they work on one that is read
// only; runr run still says it cannot write there.
func TestStateEdgeReadOnlyStore(t *testing.T) {
	repo, runDir := seStoppedRun(t)
	store := filepath.Join(repo, ".git", "runr")
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// Permissions do not stop root: run runr as nobody, and let nobody
		// reach the store through the test's private directories.
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		for d := repo; d != os.TempDir() && d != "/" && len(d) > 1; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
				require.NoError(t, os.Chmod(d, fi.Mode().Perm()|0o005))
			}
		}
	}
	chmodAll := func(dirMode, fileMode os.FileMode) {
		require.NoError(t, filepath.Walk(store, func(path string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if fi.IsDir() {
				return os.Chmod(path, dirMode)
			}
			return os.Chmod(path, fileMode)
		}))
	}
	chmodAll(0o555, 0o444)
	t.Cleanup(func() { chmodAll(0o755, 0o644) })

	runAs := func(args ...string) (int, string, string) {
		cmd, stdout, stderr := resRunrCmd(repo, []string{"RUNR_HOME=" + store}, args...)
		cmd.SysProcAttr.Credential = cred
		return resExit(t, cmd.Run()), stdout.String(), stderr.String()
	}
	id := filepath.Base(runDir)
	code, stdout, stderr := runAs("status")
	assert.Equal(t, 0, code, "status on a read-only store: %s%s", stdout, stderr)
	assert.Contains(t, stdout, id)
	code, stdout, stderr = runAs("status", id, "--json")
	assert.Equal(t, 0, code, "status ID on a read-only store: %s%s", stdout, stderr)
	code, stdout, stderr = runAs("doctor", id)
	assert.Equal(t, 0, code, "doctor ID on a read-only store: %s%s", stdout, stderr)
	assert.Contains(t, stdout, "max_iterations")
	code, _, stderr = runAs("stop", id)
	assert.Equal(t, 69, code, "stop needs a writable store: %s", stderr)
	assert.Contains(t, stderr, "not writable")
}

// A symlink planted where runr keeps a run's file is state_corrupt and the
// file it points to is never written: timeline, lock, prompt and log.
func TestStateEdgeSymlinksInTheStoreAreRefused(t *testing.T) {
	repo, runDir := seStoppedRun(t)
	victim := filepath.Join(t.TempDir(), "victim")
	const precious = "precious, not a store file\n"
	require.NoError(t, os.WriteFile(victim, []byte(precious), 0o644))
	tick := 1 // the stopped run's tick; each resume that gets to work adds one
	for _, c := range []struct {
		name    string
		path    func() string
		working bool // the resume gets as far as a tick
	}{
		{"timeline", func() string { return "timeline.jsonl" }, false},
		{"lock", func() string { return "lock" }, false},
		{"prompt", func() string { return fmt.Sprintf("prompts/tick-%04d.md", tick+1) }, true},
		{"log", func() string { return fmt.Sprintf("logs/tick-%04d-implement.log", tick+1) }, true},
	} {
		path := filepath.Join(runDir, c.path())
		kept := path + ".kept"
		if _, err := os.Lstat(path); err == nil {
			require.NoError(t, os.Rename(path, kept))
		}
		require.NoError(t, os.Symlink(victim, path))
		code, stdout, stderr := resRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
		assert.Equal(t, 65, code, "%s: %s%s", c.name, stdout, stderr)
		assert.Contains(t, stdout+stderr, path+" is a symlink", c.name)
		got, err := os.ReadFile(victim)
		require.NoError(t, err)
		assert.Equal(t, precious, string(got), "%s: the symlink's target was written", c.name)
		require.NoError(t, os.Remove(path))
		if _, err := os.Lstat(kept); err == nil {
			require.NoError(t, os.Rename(kept, path))
		}
		if c.working {
			tick++
		}
	}
}

// What the kill -9 campaign found left behind: a claim's temporary file in
// active/ (killed while the run wrote its claim), a report's in a run that
// had just completed (killed while it wrote report.md), and the store's
// writability probe (killed while opening the store). The resume of the run
// removes the first two at once, status the probe of a dead runr.
func TestStateEdgeLeftoversOfKilledWritesFound(t *testing.T) {
	repo, runDir := seStoppedRun(t)
	id := filepath.Base(runDir)
	home := filepath.Dir(seRunsDir(repo))
	claimTemp := filepath.Join(home, "active", ".tmp-"+id+".json-12345")
	require.NoError(t, os.WriteFile(claimTemp, []byte(`{"run_id":`), 0o644))
	code, stdout, stderr := resRunr(t, repo, nil, "resume", id, "--max-iterations", "1", "--quiet")
	require.Equal(t, 128, code, "%s\n%s", stdout, stderr)
	assert.NoFileExists(t, claimTemp, "the resume of the run removes its claim's temporary file")

	done := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	code, stdout, stderr = resRunr(t, done, nil, "run", "--task", "TASK.md", "--quiet", "--",
		"fakeagent", "--do", "write out.txt x; status done")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	reportTemp := filepath.Join(resRunDir(t, done), ".tmp-report.md-12345")
	require.NoError(t, os.WriteFile(reportTemp, []byte("# half"), 0o644))
	code, stdout, stderr = resRunr(t, done, nil, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.NoFileExists(t, reportTemp, "resuming a completed run removes what its last write left")

	// A pid no process has: the probe's runr is dead.
	probe := filepath.Join(seRunsDir(repo), ".tmp-probe-777-2147483600")
	require.NoError(t, os.WriteFile(probe, nil, 0o644))
	code, _, stderr = resRunr(t, repo, nil, "status")
	require.Equal(t, 0, code, stderr)
	assert.NoFileExists(t, probe, "status removes the probe of a runr that is gone")
}
