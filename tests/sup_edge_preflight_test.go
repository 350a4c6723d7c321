package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// supGit runs git in dir with the tests' environment.
func supGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testEnv(filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// A run refused at preflight for a dirty tree resumes, once the person
// committed their change, as a fresh start: the guard's base is the tree at
// the resume, so the person's commit (a lockfile among it) is not the
// agent's doing.
func TestSupEdgeResumeAfterDirtyWorktreeTakesTheBaseAtTheResume(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n", "go.sum": "a v1\n", "main.go": "package main\n"})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), []byte("a v2\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // edited\n"), 0o644))

	code, stdout, stderr := resRunr(t, dir, nil, "run", "--task", "TASK.md", "--", "fakeagent", "--do", "write out.txt done; status done")
	require.Equal(t, 4, code, "%s\n%s", stdout, stderr)
	require.Equal(t, "dirty_worktree", resReadState(t, dir).StopReason.Code)

	supGit(t, dir, "commit", "-q", "-am", "the person's own change")
	code, stdout, stderr = resRunr(t, dir, nil, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	st := resReadState(t, dir)
	assert.Equal(t, "complete", st.StopReason.Code)
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err, "the agent's allowed change")
	assert.Equal(t, "done", string(b))
}

// A run refused because its agent was not on PATH resumes once it is, with
// the base taken at the resume.
func TestSupEdgeResumeAfterWorkerNotFound(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n", "go.sum": "a v1\n"})
	agentDir := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.MkdirAll(agentDir, 0o755))
	script := "#!/bin/sh\necho done >> out.txt\necho 'RUNR_STATUS: done'\n"
	require.NoError(t, os.WriteFile(filepath.Join(agentDir, "sup-edge-agent"), []byte(script), 0o755))

	code, stdout, stderr := resRunr(t, dir, nil, "run", "--task", "TASK.md", "--", "sup-edge-agent")
	require.Equal(t, 35, code, "%s\n%s", stdout, stderr)
	require.Equal(t, "worker_not_found", resReadState(t, dir).StopReason.Code)

	// The person puts the agent on PATH, and meanwhile commits work of
	// their own, a lockfile update among it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), []byte("a v2\n"), 0o644))
	supGit(t, dir, "commit", "-q", "-am", "bump a")
	path := "PATH=" + agentDir + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	code, stdout, stderr = resRunr(t, dir, []string{path}, "resume", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Equal(t, "complete", resReadState(t, dir).StopReason.Code)
	assert.FileExists(t, filepath.Join(dir, "out.txt"))
}

// A verify command whose program does not exist is refused before the
// first agent call, naming the program and the command.
func TestSupEdgeMissingVerifyProgramIsConfigInvalid(t *testing.T) {
	dir := resumeRepo(t, map[string]string{"TASK.md": "Do it.\n",
		"runr.yaml": "verify:\n  commands:\n    - \"true\"\n    - \"CI=1 sup-edge-no-such-tool --all\"\n"})
	calls := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-calls")
	code, stdout, stderr := resRunr(t, dir, nil, "run", "--task", "TASK.md", "--", "fakeagent", "--do", "touch-count "+calls+"; write out.txt x; status done")
	require.Equal(t, 78, code, "%s\n%s", stdout, stderr)
	st := resReadState(t, dir)
	require.Equal(t, "config_invalid", st.StopReason.Code)
	assert.Contains(t, st.StopReason.Message, "sup-edge-no-such-tool")
	assert.Contains(t, st.StopReason.Message, "CI=1 sup-edge-no-such-tool --all")
	assert.NoFileExists(t, calls, "no agent call was made")
}
