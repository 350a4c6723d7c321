package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// agentBin is the demo agent built for these tests.
var agentBin string

func TestMain(m *testing.M) {
	dir, err := testenv.Build(testenv.DemoAgent)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBin = filepath.Join(dir, testenv.DemoAgent.Name)
	os.Exit(m.Run())
}

// command runs name in dir and returns its combined output and exit code.
func command(t *testing.T, dir string, env []string, stdin, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return string(out), exitErr.ExitCode()
	}
	require.NoError(t, err, "%s %v", name, args)
	return string(out), 0
}

func setupDemo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	out, code := command(t, ".", nil, "", "bash", "../setup.sh", repo)
	require.Equal(t, 0, code, out)
	return repo
}

// agentCall runs the demo agent as runr runs a command agent: in the
// repository, with the prompt on stdin and the RUNR_* environment.
func agentCall(t *testing.T, repo string, iteration, milestone int, goal, prompt string) string {
	t.Helper()
	out, code := command(t, repo, []string{
		"RUNR_RUN_ID=20261121T230017Z-3f9a1c",
		"RUNR_RUN_DIR=" + t.TempDir(),
		fmt.Sprintf("RUNR_TICK=%d", iteration*2-1),
		fmt.Sprintf("RUNR_ITERATION=%d", iteration),
		fmt.Sprintf("RUNR_MILESTONE=%d", milestone),
		"RUNR_MILESTONE_GOAL=" + goal,
	}, prompt, agentBin)
	require.Equal(t, 0, code, out)
	return out
}

const (
	goalMean = "fix Mean so that TestMean passes"
	goalMax  = "add Max(xs []int) (int, bool): the largest element, false for an empty slice, with a test"
)

func TestSetupCreatesACleanRepositoryWithAFailingTest(t *testing.T) {
	repo := setupDemo(t)

	status, code := command(t, repo, nil, "", "git", "status", "--porcelain")
	require.Equal(t, 0, code, status)
	assert.Empty(t, status, "runr refuses a dirty tree")
	log, _ := command(t, repo, nil, "", "git", "log", "--oneline")
	assert.Equal(t, 1, strings.Count(log, "\n"), log)
	for _, f := range []string{"go.mod", "stats.go", "stats_test.go", "TASK.md", "runr.yaml"} {
		assert.FileExists(t, filepath.Join(repo, f))
	}
	task, err := os.ReadFile(filepath.Join(repo, "TASK.md"))
	require.NoError(t, err)
	assert.Contains(t, string(task), "- [ ] "+goalMean+"\n")
	assert.Contains(t, string(task), "- [ ] "+goalMax+"\n")

	out, code := command(t, repo, nil, "", "go", "test", "./...")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, out, "integer divide by zero")

	out, code = command(t, ".", nil, "", "bash", "../setup.sh", repo)
	assert.Equal(t, 64, code, "setup.sh must refuse a directory that is not empty")
	assert.Contains(t, out, "is not empty")
}

// TestAgentCompletesTheDemo plays the run that runr drives: a first attempt
// at milestone 1 that verify rejects, a second one fed with the failure that
// passes, then milestone 2 in one attempt.
func TestAgentCompletesTheDemo(t *testing.T) {
	repo := setupDemo(t)

	out := agentCall(t, repo, 1, 1, goalMean, "Task: ...\nMilestone 1: "+goalMean+"\n")
	assert.Contains(t, out, "Adding a guard")
	assert.NotContains(t, out, "The last attempt failed", "there is no feedback on a first attempt")
	assert.Contains(t, out, "RUNR_STATUS: done")
	verify, code := command(t, repo, nil, "", "go", "test", "./...")
	require.NotEqual(t, 0, code, "the first attempt is meant to fall short:\n%s", verify)
	assert.Contains(t, verify, "Mean([1 2]) = 1, want 1.5")

	out = agentCall(t, repo, 2, 1, goalMean, "Task: ...\nThe last attempt failed: go test ./...\n"+verify)
	assert.Contains(t, out, "Mean([1 2]) = 1, want 1.5", "the agent quotes the feedback")
	assert.Contains(t, out, "Converting both operands")
	verify, code = command(t, repo, nil, "", "go", "test", "./...")
	require.Equal(t, 0, code, verify)

	out = agentCall(t, repo, 3, 2, goalMax, "Task: ...\nMilestone 2: "+goalMax+"\n")
	assert.Contains(t, out, "Created max.go")
	assert.Contains(t, out, "Created max_test.go")
	verify, code = command(t, repo, nil, "", "go", "test", "-v", "./...")
	require.Equal(t, 0, code, verify)
	assert.Contains(t, verify, "--- PASS: TestMax ")
	vet, code := command(t, repo, nil, "", "go", "vet", "./...")
	require.Equal(t, 0, code, vet)
	for _, f := range []string{"stats.go", "max.go", "max_test.go"} {
		src, err := os.ReadFile(filepath.Join(repo, f))
		require.NoError(t, err)
		formatted, err := format.Source(src)
		require.NoError(t, err)
		assert.Equal(t, string(formatted), string(src), "%s is gofmt'ed", f)
	}

	// Called again on a finished milestone, as after a resume, it changes nothing.
	before, _ := command(t, repo, nil, "", "git", "status", "--porcelain")
	out = agentCall(t, repo, 4, 2, goalMax, "")
	assert.Contains(t, out, "already in place")
	after, _ := command(t, repo, nil, "", "git", "status", "--porcelain")
	assert.Equal(t, before, after)
}

func TestAgentFailsOnAnUnknownMilestone(t *testing.T) {
	repo := setupDemo(t)
	cmd := exec.Command(agentBin)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "RUNR_MILESTONE=3", "RUNR_MILESTONE_GOAL=write the docs")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	assert.Equal(t, 1, exitErr.ExitCode())
	assert.Equal(t, "RUNR_STATUS: failed\n", stdout.String())
	assert.Contains(t, stderr.String(), "no milestone 3")
}

func TestFeedback(t *testing.T) {
	tests := []struct {
		name, prompt string
		want         []string
	}{
		{"none", "fix Mean\n", nil},
		{"test failure", "Feedback:\n--- FAIL: TestMean (0.00s)\n    stats_test.go:19: Mean([1 2]) = 1, want 1.5\nFAIL\n",
			[]string{"--- FAIL: TestMean (0.00s)", "stats_test.go:19: Mean([1 2]) = 1, want 1.5"}},
		{"panic", "panic: runtime error: integer divide by zero\n", []string{"panic: runtime error: integer divide by zero"}},
		{"at most six", strings.Repeat("--- FAIL: T\n", 9), []string{"--- FAIL: T", "--- FAIL: T", "--- FAIL: T", "--- FAIL: T", "--- FAIL: T", "--- FAIL: T"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, feedback(tt.prompt))
		})
	}
}
