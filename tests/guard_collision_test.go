package tests

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runrSync runs runr in repo to the end with env as its whole environment
// and returns its exit code and output.
func runrSync(t *testing.T, repo string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), args...)
	cmd.Dir = repo
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run runr %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// liveRun starts a run whose agent hangs once ready, and returns it with its
// run id once the run holds its claim.
func liveRun(t *testing.T, repo string, args ...string) (*runrProc, string) {
	t.Helper()
	argv := append([]string{"run", "--prompt", "hold the files"}, args...)
	argv = append(argv, "--", "fakeagent", "--do", "ready; hang")
	p := startRunr(t, repo, []string{"RUNR_AGENT_KILL_GRACE=2s"}, argv...)
	p.waitReady(t, 1)
	id, _ := readState(t, repo)["run_id"].(string)
	require.NotEmpty(t, id)
	require.FileExists(t, filepath.Join(repo, ".git", "runr", "active", id+".json"), "the live run holds a claim")
	return p, id
}

// stopLive ends a live run with SIGTERM and checks it stopped as terminated,
// untouched by the other run.
func stopLive(t *testing.T, p *runrProc, repo, id string) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, p.wait(t, 60*time.Second), "stderr: %s", &p.stderr)
	require.NoError(t, checkStoppedRun(filepath.Join(repo, ".git", "runr", "runs", id), []string{"terminated"}))
	assert.NoFileExists(t, filepath.Join(repo, ".git", "runr", "active", id+".json"), "a stopped run leaves no claim")
}

func TestCollisionWithALiveRunOfOverlappingScope(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	first, firstID := liveRun(t, repo, "--allow", "src/**")

	for _, scope := range [][]string{{"--allow", "src/api/**"}, nil} {
		args := append([]string{"run", "--prompt", "work"}, scope...)
		args = append(args, "--", "fakeagent", "--do", "write src/api/b.go x; status done")
		code, out := runrSync(t, repo, testEnv(repo), args...)
		assert.Equal(t, 5, code, "scope %v: %s", scope, out)
		assert.Contains(t, out, "file_collision")
		st := readState(t, repo)
		require.Equal(t, "file_collision", stopCode(st), "scope %v", scope)
		details, _ := st["stop_reason"].(map[string]any)["details"].(map[string]any)
		assert.Equal(t, firstID, details["other"], "the stop names the live run")
		assert.Equal(t, []any{"src/**"}, details["files"], "and the scope it claims")
		dir, _ := latestRunDir(repo)
		require.NoError(t, checkStoppedRun(dir, []string{"file_collision"}))
		assert.NoFileExists(t, filepath.Join(repo, "src", "api", "b.go"), "the colliding run's agent never started")
	}
	stopLive(t, first, repo, firstID)
}

func TestNoCollision(t *testing.T) {
	for _, tc := range []struct {
		name         string
		first, again []string
	}{
		{"force-parallel", []string{"--allow", "src/**"}, []string{"--allow", "src/**", "--force-parallel"}},
		{"two worktrees", []string{"--worktree"}, []string{"--worktree"}},
		{"disjoint scopes", []string{"--allow", "api/**"}, []string{"--allow", "web/**"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			first, firstID := liveRun(t, repo, tc.first...)
			file := "src/b.go"
			if tc.name == "disjoint scopes" {
				file = "web/b.go"
			}
			args := append([]string{"run", "--prompt", "work"}, tc.again...)
			args = append(args, "--", "fakeagent", "--do", "write "+file+" x; status done")
			code, out := runrSync(t, repo, testEnv(repo), args...)
			assert.Equal(t, 0, code, out)
			dir, _ := latestRunDir(repo)
			require.NoError(t, checkStoppedRun(dir, []string{"complete"}))
			stopLive(t, first, repo, firstID)
		})
	}
}

func TestStaleClaimOfAKilledRunIsIgnored(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	first, firstID := liveRun(t, repo, "--allow", "src/**")
	first.signal(t, syscall.SIGKILL)
	first.wait(t, 30*time.Second)
	killRecordedGroups(repo)
	claim := filepath.Join(repo, ".git", "runr", "active", firstID+".json")
	require.FileExists(t, claim, "SIGKILL leaves the claim behind")
	b, err := os.ReadFile(claim)
	require.NoError(t, err)
	require.True(t, strings.Contains(string(b), "src/**"), "the stale claim covers src: %s", b)

	code, out := runrSync(t, repo, testEnv(repo), "run", "--allow", "src/**", "--prompt", "work", "--",
		"fakeagent", "--do", "write src/b.go x; status done")
	assert.Equal(t, 0, code, out)
	dir, _ := latestRunDir(repo)
	require.NoError(t, checkStoppedRun(dir, []string{"complete"}))
	assert.FileExists(t, filepath.Join(repo, "src", "b.go"))
}
