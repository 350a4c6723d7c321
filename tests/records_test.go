package tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/tests/testenv"
)

// recRunr runs runr to its end like resRunr, but never waits on it longer
// than testenv.WaitLimit: a runr held by a planted record fails the test
// (naming the command) instead of hanging it.
func recRunr(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit)
	defer cancel()
	cmd, stdout, stderr := resRunrCmd(dir, env, args...)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return resExit(t, err), stdout.String(), stderr.String()
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("runr %s did not end within %s: a record held it\n%s", strings.Join(args, " "), testenv.WaitLimit, stderr)
		return -1, "", ""
	}
}

// A FIFO planted in place of one of a run's records never holds runr: the
// commands that read one run say state_corrupt naming the file (or, for
// doctor and the transcript, read around it), the commands that list runs
// go on without it, and a resume stops with state_corrupt.
func TestRecordsPlantedFIFOsNeverHoldRunr(t *testing.T) {
	for _, c := range []struct {
		file string
		// the commands that must name the file with state_corrupt
		corrupt []string
	}{
		{"state.json", []string{"status <id>", "doctor <id>", "logs <id>", "resume"}},
		{"lock", []string{"resume"}},
		{"timeline.jsonl", []string{"logs <id>", "resume"}},
		{"config.json", []string{"resume"}},
		{"guard-snapshot.gob", []string{"resume"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			repo, runDir := seStoppedRun(t)
			id := filepath.Base(runDir)
			path := filepath.Join(runDir, c.file)
			require.NoError(t, os.Remove(path))
			require.NoError(t, syscall.Mkfifo(path, 0o644))
			for _, cmd := range []struct {
				name string
				args []string
			}{
				{"status", []string{"status"}},
				{"status <id>", []string{"status", id}},
				{"doctor <id>", []string{"doctor", id}},
				{"logs <id>", []string{"logs", id}},
				{"report", []string{"report"}},
				{"resume", []string{"resume", id, "--max-iterations", "1", "--quiet"}},
			} {
				code, stdout, stderr := recRunr(t, repo, nil, cmd.args...)
				out := stdout + stderr
				if contains(c.corrupt, cmd.name) {
					assert.Equal(t, 65, code, "%s over a FIFO %s: %s", cmd.name, c.file, out)
					assert.Contains(t, out, path+" is a FIFO", cmd.name)
					continue
				}
				assert.Equal(t, 0, code, "%s over a FIFO %s: %s", cmd.name, c.file, out)
				if c.file == "state.json" {
					// The lists go on without the run, and say so.
					switch cmd.name {
					case "status":
						assert.Contains(t, stdout, id)
						assert.Contains(t, stdout, "unreadable")
					case "report":
						assert.Contains(t, stderr, "1 run unreadable and left out")
					}
				}
			}
			fi, err := os.Lstat(path)
			require.NoError(t, err)
			assert.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), "the planted file is left for a person to look at")
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Everything a resume reads back and would hand to git, to kill(2) or to a
// shell is checked first: a tampered state.json or config.json makes it
// stop with state_corrupt naming the file, having touched nothing outside
// the run directory.
func TestRecordsTamperedRecordsAreNotActedOn(t *testing.T) {
	t.Run("guard_head", func(t *testing.T) {
		t.Parallel()
		repo, runDir := seStoppedRun(t)
		victim := filepath.Join(t.TempDir(), "victim")
		require.NoError(t, os.WriteFile(victim, []byte("keep me\n"), 0o644))
		for _, head := range []string{"--output=" + victim, "x", "HEAD~1"} {
			seEditState(t, runDir, func(st map[string]any) { st["guard_head"] = head })
			code, stdout, stderr := recRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
			assert.Equal(t, 65, code, "guard_head %q: %s%s", head, stdout, stderr)
			assert.Contains(t, stderr, "guard_head", head)
			assert.Contains(t, stderr, "state.json", head)
		}
		data, err := os.ReadFile(victim)
		require.NoError(t, err)
		assert.Equal(t, "keep me\n", string(data), "git never saw --output")
	})

	t.Run("agent_process", func(t *testing.T) {
		t.Parallel()
		repo, runDir := seStoppedRun(t)
		// A process of someone else's, leading its own group: its pid,
		// group and start time are all there to copy into state.json.
		victim := exec.Command("sleep", "300")
		victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, victim.Start())
		t.Cleanup(func() { syscall.Kill(-victim.Process.Pid, syscall.SIGKILL); victim.Wait() })
		pid := victim.Process.Pid
		start := procStartTime(t, pid)
		for _, p := range []map[string]any{
			{"pid": pid, "pgid": pid, "start_time": start},
			{"pid": 1, "pgid": 1, "start_time": procStartTime(t, 1)},
			{"pid": pid, "pgid": 1, "start_time": start},
		} {
			seEditState(t, runDir, func(st map[string]any) {
				st["run_status"], st["agent_process"] = "running", p
			})
			code, stdout, stderr := recRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
			assert.NotEqual(t, 1, code, "agent_process %v: %s%s", p, stdout, stderr)
			assert.True(t, testenv.ProcessAlive(pid), "agent_process %v: the resume signalled a group runr never started", p)
		}
	})

	t.Run("config.json", func(t *testing.T) {
		t.Parallel()
		repo, runDir := seStoppedRun(t)
		marker := filepath.Join(t.TempDir(), "planted-verify-ran")
		path := filepath.Join(runDir, "config.json")
		orig, err := os.ReadFile(path)
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal(orig, &cfg))
		cfg["verify"].(map[string]any)["commands"] = []string{"touch " + marker}
		planted, err := json.Marshal(cfg)
		require.NoError(t, err)
		for _, text := range []string{string(planted), "{}\n"} {
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			code, stdout, stderr := recRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
			assert.Equal(t, 65, code, "config.json %.60q: %s%s", text, stdout, stderr)
			assert.Contains(t, stderr, path+" is not the config run")
			assert.NoFileExists(t, marker, "a verify command planted in config.json ran")
		}
	})

	t.Run("repo and worktree", func(t *testing.T) {
		t.Parallel()
		repo, runDir := seStoppedRun(t)
		// Another repository, where an edited state.json would have the
		// resume run the agent and the verify commands.
		other := resumeRepo(t, map[string]string{"OTHER.md": "not the run's\n"})
		plain := t.TempDir()
		for _, c := range []struct{ field, where, want string }{
			{"repo", other, "is not a checkout of the repository"},
			{"repo", plain, "is not a checkout of the repository"},
			{"worktree", other, "is not under"},
		} {
			data, err := os.ReadFile(filepath.Join(runDir, "state.json"))
			require.NoError(t, err)
			seEditState(t, runDir, func(st map[string]any) { st[c.field] = c.where })
			code, stdout, stderr := recRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
			assert.Equal(t, 65, code, "%s %s: %s%s", c.field, c.where, stdout, stderr)
			assert.Contains(t, stderr, c.want, c.field)
			require.NoError(t, os.WriteFile(filepath.Join(runDir, "state.json"), data, 0o644))
		}
		assert.NoDirExists(t, filepath.Join(other, ".git", "runr"), "nothing ran in the other repository")
		entries, err := os.ReadDir(plain)
		require.NoError(t, err)
		assert.Empty(t, entries, "nothing ran in the plain directory")
	})

	t.Run("config.json of an older runr", func(t *testing.T) {
		t.Parallel()
		// A run whose config.json lacks a section this runr knows (as an
		// older runr wrote it) resumes, and resumes again: the hash stays
		// the one of its config.json, not of the settings resolved now.
		repo, runDir := seStoppedRun(t)
		path := filepath.Join(runDir, "config.json")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal(data, &cfg))
		require.Contains(t, cfg, "checkpoint")
		delete(cfg, "checkpoint")
		data, err = json.Marshal(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		seEditState(t, runDir, func(st map[string]any) {
			st["fingerprint"].(map[string]any)["config_hash"] = config.HashRaw(cfg)
		})
		for i := 1; i <= 2; i++ {
			code, stdout, stderr := recRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", strconv.Itoa(i), "--quiet")
			assert.Equal(t, 128, code, "resume %d: %s%s", i, stdout, stderr)
		}
	})

	t.Run("guard snapshot", func(t *testing.T) {
		t.Parallel()
		repo, runDir := seStoppedRun(t)
		path := filepath.Join(runDir, "guard-snapshot.gob")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o644))
		code, stdout, stderr := recRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
		assert.Equal(t, 65, code, "%s%s", stdout, stderr)
		assert.Contains(t, stdout+stderr, path)
	})
}

func procStartTime(t *testing.T, pid int) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc to read the start time of process %d: %v", pid, err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	require.GreaterOrEqual(t, len(f), 20)
	start, err := strconv.ParseUint(f[19], 10, 64)
	require.NoError(t, err)
	return start
}

// An agent that swaps the run's directory for a symlink while the run
// works gets nothing written through it: the run stops with state_corrupt
// naming the directory, and the link's target holds only what the agent
// put there.
func TestRecordsRunDirectorySwappedForASymlink(t *testing.T) {
	repo := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	target := t.TempDir()
	path := supAgentScript(t, "swap-agent", `mv "$RUNR_RUN_DIR" "$RUNR_RUN_DIR.moved"
mkdir -p "`+target+`/logs" "`+target+`/prompts"
ln -s "`+target+`" "$RUNR_RUN_DIR"
echo "RUNR_STATUS: done"
`)
	code, stdout, stderr := recRunr(t, repo, []string{path}, "run", "--task", "TASK.md", "--max-iterations", "3", "--quiet", "--", "swap-agent")
	assert.Equal(t, 65, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout+stderr, "is a symlink where runr keeps a file of its own")
	var written []string
	require.NoError(t, filepath.Walk(target, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			written = append(written, p)
		}
		return err
	}))
	assert.Empty(t, written, "runr wrote through the symlink")
}

// An environment that would misdirect a run is environment_invalid naming
// the cause, before any run is created.
func TestRecordsEnvironmentIsChecked(t *testing.T) {
	repo := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n"})
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"TMPDIR=" + filepath.Join(t.TempDir(), "missing")}, "TMPDIR names"},
		{[]string{"TMPDIR=" + file}, "TMPDIR names"},
		{[]string{"GIT_DIR=" + filepath.Join(repo, ".git")}, "GIT_DIR is set"},
		{[]string{"GIT_WORK_TREE=" + repo}, "GIT_WORK_TREE is set"},
		// binDir holds runr and fakeagent, and no git.
		{[]string{"PATH=" + binDir}, "git is not installed or not on PATH"},
	} {
		code, stdout, stderr := recRunr(t, repo, c.env, "run", "--task", "TASK.md", "--max-iterations", "1", "--quiet", "--",
			filepath.Join(binDir, "fakeagent"), "--do", "print hi")
		assert.Equal(t, 69, code, "%v: %s%s", c.env, stdout, stderr)
		assert.Contains(t, stderr, c.want, "%v", c.env)
		entries, err := os.ReadDir(seRunsDir(repo))
		if !errors.Is(err, os.ErrNotExist) {
			require.NoError(t, err)
		}
		assert.Empty(t, entries, "%v: no run record is left", c.env)
	}
}
