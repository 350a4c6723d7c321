package agents

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStateDirs(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	claude := StateDirs("claude", "/h", getenv)
	assert.Equal(t, []string{"/h/.claude"}, claude.Dirs)
	assert.Equal(t, []StateFile{{Path: "/h/.claude.json", Initial: "{}\n"}}, claude.Files)
	assert.Equal(t, []string{"/h/.codex"}, StateDirs("codex", "/h", getenv).Dirs)
	assert.Equal(t, []string{"/h/.gemini"}, StateDirs("gemini", "/h", getenv).Dirs)
	assert.Equal(t, []string{"/h/.qwen"}, StateDirs("qwen", "/h", getenv).Dirs)
	assert.Equal(t, []string{"/h/.config/opencode", "/h/.local/share/opencode", "/h/.local/state/opencode", "/h/.cache/opencode"},
		StateDirs("opencode", "/h", getenv).Dirs)
	assert.Empty(t, StateDirs("command", "/h", getenv))
	assert.Empty(t, StateDirs("claude", "", getenv), "no HOME, nothing to grant")

	env["CLAUDE_CONFIG_DIR"] = "/etc/claude-here"
	env["CODEX_HOME"] = "relative/not/taken"
	env["XDG_CONFIG_HOME"] = "/x/config"
	assert.Equal(t, []string{"/etc/claude-here"}, StateDirs("claude", "/h", getenv).Dirs)
	assert.Equal(t, []string{"/h/.codex"}, StateDirs("codex", "/h", getenv).Dirs)
	assert.Equal(t, "/x/config/opencode", StateDirs("opencode", "/h", getenv).Dirs[0])
}

func TestAiderStateDir(t *testing.T) {
	assert.Equal(t, []string{"/h/.aider"}, StateDirs("aider", "/h", func(string) string { return "" }).Dirs)
}
