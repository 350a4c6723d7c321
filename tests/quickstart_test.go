package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quickStartAgent is a project's own agent script, as the README's
// `-- ./agent.sh` runs one: its first call says it is ready and works until
// it is stopped; the next one does the work and says it is done.
const quickStartAgent = `#!/bin/sh
n=$(cat "$QS_CALLS" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$QS_CALLS"
echo "call $n: working on $(basename "$1")"
if [ "$n" = 1 ]; then
	echo "FAKEAGENT READY" >> "$FAKEAGENT_READY_FILE"
	sleep 300
fi
echo done > done.txt
echo "RUNR_STATUS: done"
`

// TestReadmeQuickStart follows the README's quick start on a new checkout
// of a project: runr init, the task written, a run of the project's agent
// script (-- ./agent.sh), Ctrl+C while the agent works, then `runr resume
// latest`, which completes the run with the same agent; then the same with
// the agent named in runr.yaml instead of after --.
func TestReadmeQuickStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config func(string) string // runr.yaml as the user edits it after init
		args   []string
	}{
		{"agent after --", func(y string) string { return y }, []string{"run", "--", "./agent.sh", "{prompt_file}"}},
		{"agent in runr.yaml", func(y string) string {
			kind := regexp.MustCompile(`(?m)^  kind: \w+$`)
			require.Regexp(t, kind, y, "runr init names an agent")
			return kind.ReplaceAllString(y, "  kind: command\n  command: [./agent.sh, \"{prompt_file}\"]")
		}, []string{"run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t)
			calls := filepath.Join(t.TempDir(), "calls")
			require.NoError(t, os.WriteFile(filepath.Join(repo, "Makefile"), []byte("test:\n\ttest -f done.txt\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(repo, "agent.sh"), []byte(quickStartAgent), 0o755))
			supGit(t, repo, "add", "-A")
			supGit(t, repo, "commit", "-qm", "the project and its agent script")

			code, stdout, stderr := runrCmd(t, repo, "init")
			require.Equal(t, 0, code, "runr init: %s%s", stdout, stderr)
			assert.Contains(t, stdout, "verify: make test (from Makefile)")
			yaml, err := os.ReadFile(filepath.Join(repo, "runr.yaml"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(repo, "runr.yaml"), []byte(tc.config(string(yaml))), 0o644))
			// $EDITOR TASK.md: the template's milestones replaced.
			require.NoError(t, os.WriteFile(filepath.Join(repo, "TASK.md"), []byte("# Task\n\nWrite done.txt.\n\n- [ ] write done.txt\n"), 0o644))

			p := startRunr(t, repo, []string{"QS_CALLS=" + calls}, tc.args...)
			p.waitReady(t, 1)
			p.signal(t, syscall.SIGINT)
			require.Equal(t, 130, p.wait(t, time.Minute), "Ctrl+C stops the run\nstderr: %s", &p.stderr)
			assert.Contains(t, p.stdout.String(), "user_stopped")
			assert.Contains(t, p.stdout.String(), "runr resume ", "the summary says how to go on")

			cmd := exec.Command(filepath.Join(binDir, "runr"), "resume", "latest")
			cmd.Dir = repo
			cmd.Env = append(testEnv(repo), "QS_CALLS="+calls, "FAKEAGENT_READY_FILE="+p.ready)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "runr resume latest:\n%s", out)
			assert.Contains(t, string(out), "stopped: complete")
			n, err := os.ReadFile(calls)
			require.NoError(t, err)
			assert.Equal(t, "2", strings.TrimSpace(string(n)), "the resume ran the same agent script, once more")
			done, err := os.ReadFile(filepath.Join(repo, "done.txt"))
			require.NoError(t, err, "the agent's work is in the checkout")
			assert.Equal(t, "done\n", string(done))
		})
	}
}
