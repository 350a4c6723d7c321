package agents

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// What each kind's adapter says, one row per kind: the gen_ai provider,
// whether its input tokens hold its cache reads, whether its output is a
// stream of events runr reads activity from, and the variables that mark a
// nested session.
func TestAdapterFacts(t *testing.T) {
	tests := []struct {
		kind, provider string
		inputHoldsRead bool
		events         bool
		nested         []string
	}{
		{"claude", "anthropic", false, true, []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT",
			"CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_SESSION_ATTENDED",
			"CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS", "CLAUDE_PID"}},
		{"codex", "openai", true, true, []string{"CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID"}},
		{"gemini", "gcp.gemini", true, true, []string{"GEMINI_CLI", "GEMINI_CLI_NO_RELAUNCH", "GEMINI_CLI_IDE_SERVER_PORT", "GEMINI_CLI_IDE_WORKSPACE_PATH"}},
		{"opencode", "opencode", false, true, []string{"OPENCODE", "OPENCODE_PID"}},
		{"aider", "aider", false, false, nil},
		{"qwen", "alibaba", true, true, []string{"QWEN_CODE", "QWEN_CODE_NO_RELAUNCH", "QWEN_CODE_IDE_SERVER_PORT", "QWEN_CODE_IDE_WORKSPACE_PATH"}},
		{"command", "command", false, false, nil},
	}
	var kinds, nested []string
	for _, tt := range tests {
		kinds = append(kinds, tt.kind)
		nested = append(nested, tt.nested...)
		a := mustLookup(t, tt.kind)
		assert.Equal(t, tt.provider, GenAIProvider(tt.kind), tt.kind)
		assert.Equal(t, tt.inputHoldsRead, a.InputHoldsCacheReads(), tt.kind)
		assert.Equal(t, tt.events, EventReader(tt.kind, "/w") != nil, tt.kind)
		assert.Equal(t, tt.nested, a.NestedSessionEnv(), tt.kind)
	}
	assert.Equal(t, kinds, Kinds(), "one row per kind, in the registry's order")
	assert.ElementsMatch(t, nested, NestedSessionEnv, "every kind's variables are removed, whatever the kind of the call")

	// A kind runr does not know (an old record's) names itself and reads
	// no events.
	assert.Equal(t, "cursor", GenAIProvider("cursor"))
	assert.Nil(t, EventReader("cursor", "/w"))
	assert.Equal(t, lineActivity{}, NewActivityReader("cursor", "/w"))
	assert.Empty(t, StateDirs("cursor", "/h", func(string) string { return "" }))
	assert.Empty(t, RootSandboxProblem("cursor", "", 0, nil))
}

// The kinds a budget message proposes are those whose CLI reports cost or
// tokens: every kind but command.
func TestUsageKinds(t *testing.T) {
	want := slices.DeleteFunc(Kinds(), func(k string) bool { return k == CommandKind })
	assert.Equal(t, strings.Join(want, ", "), usageKinds())
}
