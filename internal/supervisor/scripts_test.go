package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/tests/testenv"
)

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755))
}

// scriptSupervisor is a supervisor of run runID working in repo whose
// stop.success holds the given custom_script conditions.
func scriptSupervisor(t *testing.T, repo, runID string, environ []string, conds ...map[string]any) *Supervisor {
	t.Helper()
	raw := make([]any, len(conds))
	for i, c := range conds {
		c["type"] = "custom_script"
		raw[i] = c
	}
	decoded, err := stopconditions.DecodeList("stop.success", raw)
	require.NoError(t, err)
	cfg := &config.Config{Stop: stopconditions.Rules{Success: decoded}}
	cfg.Agent.KillGrace = time.Second
	s := New(Options{Config: cfg, Store: &state.Store{Home: t.TempDir()}, Environ: environ})
	s.st = &state.State{RunID: runID}
	s.dir = repo
	return s
}

// judge runs the scripts as an evaluation does and judges the conditions
// with their results.
func judge(s *Supervisor, ctx context.Context) []stopconditions.Result {
	snap := &stopconditions.Snapshot{Scripts: s.runScripts(ctx)}
	var out []stopconditions.Result
	for _, c := range s.cfg.Stop.Success {
		out = append(out, c.Evaluate(snap))
	}
	return out
}

func TestCustomScript(t *testing.T) {
	repo := t.TempDir()
	writeScript(t, repo, "ok.sh", "exit 0\n")
	writeScript(t, repo, "fail.sh", "echo checking >&2\necho \"coverage 61% below 80%\"\nexit 3\n")
	// Met only when run in the repository, with the run's environment and
	// the configured arguments.
	writeScript(t, repo, "ctx.sh", `[ -f ctx.sh ] && [ "$RUNR_RUN_ID" = "r1" ] && [ "$1" = "--min" ] && [ "$2" = "80" ]`+"\n")

	tests := []struct {
		name    string
		cond    map[string]any
		runID   string
		met     bool
		message string
	}{
		{"exit 0 is met", map[string]any{"script": "./ok.sh", "timeout": "10s"}, "r1", true, "script ./ok.sh exited 0"},
		{"non-zero is not met and says why", map[string]any{"script": "./fail.sh", "timeout": "10s"}, "r1", false,
			"script ./fail.sh exited 3: coverage 61% below 80%"},
		{"repository, environment and arguments", map[string]any{"script": "./ctx.sh", "args": []any{"--min", "80"}, "timeout": "10s"}, "r1", true,
			"script ./ctx.sh --min 80 exited 0"},
		{"wrong environment", map[string]any{"script": "./ctx.sh", "args": []any{"--min", "80"}, "timeout": "10s"}, "r2", false,
			"script ./ctx.sh --min 80 exited 1"},
		{"a program on PATH", map[string]any{"script": "true", "timeout": "10s"}, "r1", true, "script true exited 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scriptSupervisor(t, repo, tt.runID, os.Environ(), tt.cond)
			got := judge(s, context.Background())[0]
			assert.Equal(t, tt.met, got.Met)
			assert.Equal(t, tt.message, got.Message)
		})
	}

	t.Run("missing script", func(t *testing.T) {
		s := scriptSupervisor(t, repo, "r1", os.Environ(), map[string]any{"script": "./nope.sh", "timeout": "10s"})
		got := judge(s, context.Background())[0]
		assert.False(t, got.Met)
		assert.True(t, strings.HasPrefix(got.Message, "script ./nope.sh could not run: "), got.Message)
	})
}

// TestCustomScriptTimeoutKillsGroup runs a script that starts a child and
// hangs; on timeout the script and its child must both be gone.
func TestCustomScriptTimeoutKillsGroup(t *testing.T) {
	repo := t.TempDir()
	writeScript(t, repo, "hang.sh", "sleep 60 &\necho $! > child.pid\nwait\n")
	s := scriptSupervisor(t, repo, "r1", os.Environ(), map[string]any{"script": "./hang.sh", "timeout": "500ms"})

	got := judge(s, context.Background())[0]
	assert.False(t, got.Met)
	assert.Equal(t, "script ./hang.sh ran past its timeout of 500ms and was killed", got.Message)

	data, err := os.ReadFile(filepath.Join(repo, "child.pid"))
	require.NoError(t, err, "the script should have started its child before the timeout")
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	assertGone(t, pid)
}

// TestCustomScriptStoppedByTheRun: a script that ignores SIGTERM is ended
// within kill_grace of the run's context ending, and the scripts after it
// are not started.
func TestCustomScriptStoppedByTheRun(t *testing.T) {
	repo := t.TempDir()
	writeScript(t, repo, "stubborn.sh", "trap '' TERM\necho $$ > ready.tmp\nmv ready.tmp ready\nwhile :; do sleep 1; done\n")
	writeScript(t, repo, "after.sh", "touch after-ran\n")
	s := scriptSupervisor(t, repo, "r1", os.Environ(),
		map[string]any{"script": "./stubborn.sh", "timeout": "60s"}, map[string]any{"script": "./after.sh"})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []stopconditions.Result, 1)
	go func() { done <- judge(s, ctx) }()
	waitFile(t, filepath.Join(repo, "ready"))
	cancel()
	start := time.Now()
	var got []stopconditions.Result
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the scripts did not return after the run's context ended")
	}
	assert.Less(t, time.Since(start), s.cfg.Agent.KillGrace+3*time.Second, "ended within kill_grace")
	assert.Equal(t, "script ./stubborn.sh was stopped: the run is stopping", got[0].Message)
	assert.Equal(t, "script ./after.sh was not run: the run is stopping", got[1].Message)
	assert.NoFileExists(t, filepath.Join(repo, "after-ran"))

	// Nothing is started once the run is stopping.
	require.NoError(t, os.Remove(filepath.Join(repo, "ready")))
	got = judge(s, ctx)
	assert.Equal(t, "script ./stubborn.sh was not run: the run is stopping", got[0].Message)
	assert.NoFileExists(t, filepath.Join(repo, "ready"))
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s never appeared", path)
		time.Sleep(10 * time.Millisecond)
	}
}

// assertGone waits for pid to end; a zombie waiting for its reaper counts as
// gone.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for testenv.ProcessAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived its script", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
