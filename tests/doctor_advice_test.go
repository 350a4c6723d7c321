package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDoctorGuardAdviceFollowedLiterally stops a run on a guard whose agent
// wrote files outside scope.allow (one with a newline in its name) and
// touched the run's uncommitted runr.yaml, then does exactly what doctor
// says: runs its git stash line as printed, and resumes. The stash takes
// the agent's out-of-scope files and leaves runr.yaml, runr's own config,
// so the resume reads the same settings and completes.
func TestDoctorGuardAdviceFollowedLiterally(t *testing.T) {
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{"README.md": "readme\n"})
	config := "scope:\n  allow: [\"src/**\"]\n"
	writeFiles(t, repo, map[string]string{"runr.yaml": config})
	code, out, errOut := runrCmd(t, repo, "run", "--quiet", "--prompt", "work", "--", "fakeagent",
		"--do", `#1: write src/a.txt in scope; write odd\nname.txt out; write notes.txt out; append runr.yaml # a comment; status done`,
		"--do", "#2+: write src/b.txt in scope; status done")
	require.Equal(t, 2, code, "stdout: %s\nstderr: %s", out, errOut)
	got, _ := stopOf(t, repo)
	require.Equal(t, "guard_violation", got)
	assert.Equal(t, 1, strings.Count(out, "runr doctor "), "the summary names doctor once:\n%s", out)

	code, report, errOut := runrCmd(t, repo, "doctor", "latest")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.NotContains(t, report, "$ runr doctor", "doctor never suggests itself")
	actions := doctorActions(t, repo)
	require.Len(t, actions, 2, "%s", report)
	stash := actions[0]
	require.True(t, strings.HasPrefix(stash, "git stash push --include-untracked -- "), stash)
	assert.NotContains(t, stash, "runr.yaml", "the run's config is runr's, not the agent's change")
	assert.Contains(t, report, "runr.yaml", "the report still says the agent touched it")

	code, shOut := shellIn(t, repo, stash)
	require.Equal(t, 0, code, "%s\n%s", stash, shOut)
	assert.NoFileExists(t, filepath.Join(repo, "odd\nname.txt"))
	assert.NoFileExists(t, filepath.Join(repo, "notes.txt"))
	assert.FileExists(t, filepath.Join(repo, "src", "a.txt"), "in-scope work stays")
	b, err := os.ReadFile(filepath.Join(repo, "runr.yaml"))
	require.NoError(t, err, "runr.yaml is not stashed")
	assert.True(t, strings.HasPrefix(string(b), config))
	// The hint: the agent's edit to runr.yaml is undone by hand.
	assert.Contains(t, report, "the stash leaves runr.yaml alone")
	writeFiles(t, repo, map[string]string{"runr.yaml": config})
	stashed := gitOut(t, repo, testEnv(repo), "stash", "show", "--include-untracked", "--name-only", "-z")
	assert.ElementsMatch(t, []string{"notes.txt", "odd\nname.txt"}, strings.Split(strings.TrimRight(stashed, "\x00"), "\x00"))

	require.Equal(t, "runr resume ", actions[1][:len("runr resume ")])
	code, out, errOut = runrCmd(t, repo, strings.Fields(actions[1])[1:]...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	got, _ = stopOf(t, repo)
	assert.Equal(t, "complete", got)
}

// TestDoctorTicksAgree: the last failure and the error signatures of a run
// stopped by the same error name the same ticks, those the failures came in.
func TestDoctorTicksAgree(t *testing.T) {
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{"runr.yaml": "verify:\n  commands: [\"test -f ok.txt\"]\n"})
	code, out, errOut := runrCmd(t, repo, "run", "--quiet", "--prompt", "work", "--", "fakeagent", "--do", "touch-count calls.txt; status done")
	require.Equal(t, 41, code, "stdout: %s\nstderr: %s", out, errOut)
	assert.Equal(t, 1, strings.Count(out, "runr doctor "), "the summary names doctor once:\n%s", out)

	code, report, _ := runrCmd(t, repo, "doctor", "latest")
	require.Equal(t, 0, code)
	assert.Contains(t, report, "Last failure: tick 6, verify")
	assert.Contains(t, report, "3x ")
	assert.Contains(t, report, " (ticks 2-6)", "the signature's last tick is the last failure's:\n%s", report)
	assert.NotContains(t, report, "$ runr doctor")
}
