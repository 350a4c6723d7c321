package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/tests/testenv"
)

// The agent's environment is runr's less the variables by which an agent
// CLI recognises it runs inside another agent's session; verify commands
// keep runr's whole environment.
func TestAgentEnvLacksNestedSessionVariables(t *testing.T) {
	repo := newRepo(t)
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--prompt", "say done",
		"--verify", "env > "+filepath.Join(out, "verify.env"),
		"--", "sh", "-c", "env > "+filepath.Join(out, "agent.env")+"; echo 'RUNR_STATUS: done'")
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo), "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CODE_SSE_PORT=4242",
		"GEMINI_CLI=1", "QWEN_CODE_NO_RELAUNCH=true", "OPENCODE=1", "CODEX_SANDBOX=seatbelt", "RUNR_TEST_KEEP=kept")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)

	agentEnv, err := os.ReadFile(filepath.Join(out, "agent.env"))
	require.NoError(t, err)
	for _, k := range agents.NestedSessionEnv {
		assert.NotContains(t, "\n"+string(agentEnv), "\n"+k+"=", "the agent must not see %s", k)
	}
	assert.Contains(t, string(agentEnv), "RUNR_TEST_KEEP=kept")
	assert.Contains(t, string(agentEnv), "RUNR_RUN_ID=")

	verifyEnv, err := os.ReadFile(filepath.Join(out, "verify.env"))
	require.NoError(t, err)
	assert.Contains(t, string(verifyEnv), "CLAUDECODE=1", "only the agent call loses them")
}

// TestClaudeCLIIntegrationNested runs runr as if from inside a Claude Code
// session (CLAUDECODE=1, CLAUDE_CODE_ENTRYPOINT=cli and the outer session's
// IDE port in its environment): the real CLI it starts still edits, and the
// run completes. The model's first tool call has the CLI's Bash tool record
// its environment: the outer session's variables did not reach the CLI (it
// sets CLAUDECODE for its tools itself, but no IDE port).
func TestClaudeCLIIntegrationNested(t *testing.T) {
	cli := claudeCLI(t)
	repo := newRepo(t)
	target := filepath.Join(repo, "hello.txt")
	envFile := filepath.Join(t.TempDir(), "tool.env")
	api := testenv.NewMessagesAPI(t, func(req testenv.APIRequest) testenv.APIReply {
		switch {
		case !req.HasTool("Bash") || !req.HasTool("Write"):
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "hello"}}}
		case req.ToolResults() == 0:
			return testenv.APIReply{Blocks: []testenv.APIBlock{
				{Text: "First the environment."},
				{Tool: "Bash", Input: map[string]any{"command": "env > " + envFile, "description": "record the environment"}},
			}}
		case req.ToolResults() == 1:
			return testenv.APIReply{Blocks: []testenv.APIBlock{
				{Text: "Now the file."},
				{Tool: "Write", Input: map[string]any{"file_path": target, "content": "hello from the model\n"}},
			}}
		}
		return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "Wrote hello.txt."}}}
	})
	code, out := runrWithCLIEnv(t, cli, repo, api, []string{"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CODE_SSE_PORT=45123"},
		"--prompt", "write hello.txt", "--verify", verifyHello)
	api.Check(t)
	require.Equal(t, 0, code, "runr output:\n%s", out)
	assert.FileExists(t, target)
	st := readRunState(t, repo)
	assert.Equal(t, "complete", string(st.StopReason.Code))

	env, err := os.ReadFile(envFile)
	require.NoError(t, err, "the CLI's Bash tool ran")
	assert.NotContains(t, string(env), "CLAUDE_CODE_SSE_PORT=45123", "the outer session's IDE port did not reach the CLI")
	assert.NotContains(t, "\n"+string(env), "\nCLAUDE_CODE_ENTRYPOINT=cli\n", "the outer session's entrypoint did not reach the CLI")
	assert.Contains(t, string(env), "RUNR_RUN_ID=", "the environment is runr's")
}
