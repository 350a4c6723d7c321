package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// TestClaudeCLISandbox runs the real Claude Code CLI under --sandbox=on in
// the user's checkout, with a HOME of its own outside it: the model's
// Write of a file in the work tree succeeds, its Bash command that writes
// into HOME and beside the checkout is refused, and the run completes.
// The CLI's own state (~/.claude, ~/.claude.json) stays writable to it.
func TestClaudeCLISandbox(t *testing.T) {
	cli := claudeCLI(t)
	skipWithoutSandbox(t)
	repo := newRepo(t)
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte("original\n"), 0o644))
	outside := filepath.Join(filepath.Dir(repo), "outside-"+filepath.Base(repo)+".txt")
	target := filepath.Join(repo, "hello.txt")
	var denied atomic.Bool // the Bash tool's result told the model of the refusal
	api := testenv.NewMessagesAPI(t, func(req testenv.APIRequest) testenv.APIReply {
		switch {
		case !req.HasTool("Write"):
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "hello"}}}
		case req.ToolResults() == 0:
			return testenv.APIReply{Blocks: []testenv.APIBlock{
				{Text: "I will write the file."},
				{Tool: "Write", Input: map[string]any{"file_path": target, "content": "hello from the model\n"}},
			}}
		case req.ToolResults() == 1:
			return testenv.APIReply{Blocks: []testenv.APIBlock{
				{Tool: "Bash", Input: map[string]any{"command": "echo x >> " + filepath.Join(home, ".bashrc") + "; echo x > " + outside, "description": "write outside"}},
			}}
		default:
			raw, _ := json.Marshal(req.Messages)
			if strings.Contains(string(raw), "Permission denied") {
				denied.Store(true)
			}
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "Wrote hello.txt."}}}
		}
	})
	code, out := runrWithCLIEnv(t, cli, repo, api, []string{"HOME=" + home},
		"--prompt", "write hello.txt", "--verify", verifyHello, "--sandbox=on")
	api.Check(t)
	require.Equal(t, 0, code, "runr output:\n%s", out)
	assert.FileExists(t, target)
	assert.True(t, denied.Load(), "the Bash tool's writes outside the work tree were refused")
	assert.NoFileExists(t, outside)
	b, err := os.ReadFile(filepath.Join(home, ".bashrc"))
	require.NoError(t, err)
	assert.Equal(t, "original\n", string(b))

	st := readRunState(t, repo)
	assert.Equal(t, "complete", string(st.StopReason.Code))
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	ev := sandboxEvent(t, runDir)
	assert.Equal(t, true, ev["confined"])
	assert.Equal(t, true, ev["namespace"])
	assert.Contains(t, ev["writable"], filepath.Join(home, ".claude"))
	assert.Contains(t, ev["writable"], filepath.Join(home, ".claude.json"))
	// The CLI kept its state: its session transcript and its settings file.
	sessions, err := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	require.NoError(t, err)
	assert.NotEmpty(t, sessions)
	b, err = os.ReadFile(filepath.Join(home, ".claude.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "firstStartTime")
}
