package stopconditions

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755))
}

func TestCustomScript(t *testing.T) {
	repo := t.TempDir()
	writeScript(t, repo, "ok.sh", "exit 0\n")
	writeScript(t, repo, "fail.sh", "echo checking >&2\necho \"coverage 61% below 80%\"\nexit 3\n")
	// Met only when run in the repository, with the snapshot's environment
	// and the configured arguments.
	writeScript(t, repo, "ctx.sh", `[ -f ctx.sh ] && [ "$RUNR_RUN_ID" = "r1" ] && [ "$1" = "--min" ] && [ "$2" = "80" ]`+"\n")
	env := append(os.Environ(), "RUNR_RUN_ID=r1")

	tests := []struct {
		name    string
		cond    customScript
		env     []string
		met     bool
		message string
	}{
		{"exit 0 is met", customScript{script: "./ok.sh", timeout: 10 * time.Second}, nil, true, "script ./ok.sh exited 0"},
		{"non-zero is not met and says why", customScript{script: "./fail.sh", timeout: 10 * time.Second}, nil, false,
			"script ./fail.sh exited 3: coverage 61% below 80%"},
		{"repository, environment and arguments", customScript{script: "./ctx.sh", args: []string{"--min", "80"}, timeout: 10 * time.Second}, env, true,
			"script ./ctx.sh --min 80 exited 0"},
		{"wrong environment", customScript{script: "./ctx.sh", args: []string{"--min", "80"}, timeout: 10 * time.Second}, os.Environ(), false,
			"script ./ctx.sh --min 80 exited 1"},
		{"a program on PATH", customScript{script: "true", timeout: 10 * time.Second}, nil, true, "script true exited 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cond.Evaluate(&Snapshot{RepoDir: repo, ScriptEnv: tt.env})
			assert.Equal(t, tt.met, got.Met)
			assert.Equal(t, boolProgress(tt.met), got.Progress)
			assert.Equal(t, tt.message, got.Message)
		})
	}

	t.Run("missing script", func(t *testing.T) {
		got := customScript{script: "./nope.sh", timeout: 10 * time.Second}.Evaluate(&Snapshot{RepoDir: repo})
		assert.False(t, got.Met)
		assert.True(t, strings.HasPrefix(got.Message, "script ./nope.sh could not run: "), got.Message)
	})
}

// TestCustomScriptTimeoutKillsGroup runs a script that starts a child and
// hangs; on timeout the script and its child must both be gone.
func TestCustomScriptTimeoutKillsGroup(t *testing.T) {
	repo := t.TempDir()
	writeScript(t, repo, "hang.sh", "sleep 60 &\necho $! > child.pid\nwait\n")
	c := customScript{script: "./hang.sh", timeout: 500 * time.Millisecond}

	got := c.Evaluate(&Snapshot{RepoDir: repo})
	assert.False(t, got.Met)
	assert.Equal(t, "script ./hang.sh ran past its timeout of 500ms and was killed", got.Message)

	data, err := os.ReadFile(filepath.Join(repo, "child.pid"))
	require.NoError(t, err, "the script should have started its child before the timeout")
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the script's child %d outlived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processAlive says whether pid runs; a zombie waiting for its reaper counts
// as gone.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // no /proc (macOS): signal 0 is all there is
	}
	// The state follows the command name, which is in parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
