package agents

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestLookup(t *testing.T) {
	for _, kind := range Kinds() {
		a, err := Lookup(kind)
		require.NoError(t, err, kind)
		assert.Equal(t, kind, a.Kind())
	}
	assert.Equal(t, []string{"claude", "codex", "gemini", "opencode", "aider", "qwen", "command"}, Kinds())

	_, err := Lookup("copilot")
	require.Error(t, err)
	assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
	for _, kind := range Kinds() {
		assert.Contains(t, err.Error(), kind)
	}
	assert.Contains(t, err.Error(), `"copilot"`)
}

func TestProgramVersionAndCredentials(t *testing.T) {
	for _, kind := range []string{"claude", "codex", "gemini", "opencode", "aider", "qwen"} {
		a := mustLookup(t, kind)
		assert.Equal(t, kind, a.Program(Request{}))
		assert.Equal(t, []string{"--version"}, a.VersionArgs())
		assert.NotEmpty(t, a.CredentialEnv(), kind)
		for _, name := range a.CredentialEnv() {
			assert.NotContains(t, name, "=", "names only")
		}
	}
	cmd := mustLookup(t, "command")
	assert.Equal(t, "./agent.sh", cmd.Program(Request{Command: []string{"./agent.sh", "x"}}))
	assert.Equal(t, "", cmd.Program(Request{}))
	assert.Nil(t, cmd.VersionArgs())
	assert.Nil(t, cmd.CredentialEnv())
}

func TestDetectSignal(t *testing.T) {
	const promise = "<promise>COMPLETE</promise>"
	tests := []struct {
		name, text, prompt string
		want               Signal
		wantText           string
	}{
		{"nothing", "all good", "", SignalNone, ""},
		{"promise line", "done.\n<promise>COMPLETE</promise>\n", "", SignalDone, ""},
		{"promise with surrounding spaces", "  <promise>COMPLETE</promise>  ", "", SignalDone, ""},
		{"promise inside a sentence", "I will print <promise>COMPLETE</promise> later", "", SignalNone, ""},
		{"status done", "RUNR_STATUS: done", "", SignalDone, ""},
		{"status blocked with text", "RUNR_STATUS: blocked: need the API token", "", SignalBlocked, "need the API token"},
		{"status failed with text", "RUNR_STATUS: failed cannot compile", "", SignalFailed, "cannot compile"},
		{"status is case-insensitive in the word", "RUNR_STATUS: DONE", "", SignalDone, ""},
		{"unknown word", "RUNR_STATUS: doneish", "", SignalNone, ""},
		{"status inside a line", "say RUNR_STATUS: done when finished", "", SignalNone, ""},
		{"last signal wins", "RUNR_STATUS: blocked x\nRUNR_STATUS: done", "", SignalDone, ""},
		{"echo of the prompt is ignored", "RUNR_STATUS: done\n<promise>COMPLETE</promise>",
			"When finished print one of these lines:\nRUNR_STATUS: done\n<promise>COMPLETE</promise>\n", SignalNone, ""},
		{"a prompt line echoed, then a real one", "RUNR_STATUS: blocked: why\nRUNR_STATUS: done",
			"If stuck print\nRUNR_STATUS: blocked: why", SignalDone, ""},
		{"CRLF lines", "work\r\nRUNR_STATUS: failed: broke\r\n", "", SignalFailed, "broke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, text := DetectSignal(tt.text, promise, tt.prompt)
			assert.Equal(t, tt.want, s)
			assert.Equal(t, tt.wantText, text)
		})
	}

	s, _ := DetectSignal("<promise>COMPLETE</promise>", "", "")
	assert.Equal(t, SignalDone, s, "an empty promise means the default one")
	s, _ = DetectSignal("<done/>", "<done/>", "")
	assert.Equal(t, SignalDone, s, "a custom promise")
}

func TestClassifyText(t *testing.T) {
	tests := []struct {
		text string
		want Class
	}{
		{"Invalid API key · Fix external API key", ClassAuth},
		{"unexpected status 401 Unauthorized", ClassAuth},
		{"Please run /login", ClassAuth},
		{"Claude AI usage limit reached|1763776800", ClassRateLimit},
		{"You've hit your limit · resets 3pm (Europe/Berlin)", ClassRateLimit},
		{"429 Too Many Requests", ClassRateLimit},
		{"RESOURCE_EXHAUSTED: quota exceeded", ClassRateLimit},
		{"API Error: 529 Overloaded", ClassServer},
		{"502 Bad Gateway", ClassServer},
		{"compile error in main.go:500", ClassError},
		{"see line 401 of the log", ClassError},
		{"API Error: Request rejected (429)", ClassRateLimit},
		{"HTTP 503", ClassServer},
		{"something broke", ClassError},
		{"", ClassError},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, classifyText(tt.text), tt.text)
	}
}

func TestParseResetAt(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	now := time.Date(2026, 11, 21, 13, 0, 0, 0, berlin) // 13:00 in Berlin
	tests := []struct {
		name, text string
		want       time.Time
	}{
		{"epoch after a pipe", "Claude AI usage limit reached|1763776800", time.Unix(1763776800, 0).UTC()},
		{"epoch in JSON", `{"error":{"type":"usage_limit_reached","resets_at":1777936568}}`, time.Unix(1777936568, 0).UTC()},
		{"clock later today", "You've hit your limit · resets 3pm (Europe/Berlin)", time.Date(2026, 11, 21, 15, 0, 0, 0, berlin)},
		{"clock already past: tomorrow", "limit reached, resets 9:30am (Europe/Berlin)", time.Date(2026, 11, 22, 9, 30, 0, 0, berlin)},
		{"24h clock without zone uses now's zone", "resets at 18:45", time.Date(2026, 11, 21, 18, 45, 0, 0, berlin)},
		{"12am is midnight", "resets 12am (Europe/Berlin)", time.Date(2026, 11, 22, 0, 0, 0, 0, berlin)},
		{"another zone", "resets 3pm (America/New_York)", time.Date(2026, 11, 21, 15, 0, 0, 0, mustZone(t, "America/New_York"))},
		{"duration", "Try again in 2 hours 30 minutes.", now.Add(150 * time.Minute)},
		{"short duration", "retry in 45s", now.Add(45 * time.Second)},
		{"bare hour is ambiguous", "resets 3", time.Time{}},
		{"nothing", "rate limited", time.Time{}},
		{"bad hour", "resets 13pm", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseResetAt(tt.text, now)
			assert.True(t, tt.want.Equal(got), "want %v, got %v", tt.want, got)
		})
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	require.NoError(t, err)
	return l
}

func TestRootSandboxProblem(t *testing.T) {
	tests := []struct {
		name  string
		kind  string
		mode  string
		euid  int
		env   []string
		wants bool
	}{
		{"root, default mode, no IS_SANDBOX", "claude", "", 0, []string{"HOME=/root"}, true},
		{"root, bypass, IS_SANDBOX=1", "claude", "bypassPermissions", 0, []string{"IS_SANDBOX=1"}, false},
		{"root, bypass, IS_SANDBOX=0", "claude", "bypassPermissions", 0, []string{"IS_SANDBOX=0"}, true},
		{"root, acceptEdits", "claude", "acceptEdits", 0, nil, false},
		{"not root", "claude", "bypassPermissions", 1000, nil, false},
		{"another agent", "codex", "bypassPermissions", 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := RootSandboxProblem(tt.kind, tt.mode, tt.euid, tt.env)
			if !tt.wants {
				assert.Empty(t, msg)
				return
			}
			assert.Contains(t, msg, "IS_SANDBOX=1")
			assert.Contains(t, msg, "root")
		})
	}
}

func TestInvocations(t *testing.T) {
	long := "x" + strings.Repeat("y", maxArgPrompt)
	tests := []struct {
		name      string
		kind      string
		req       Request
		argv      []string
		stdin     string
		wantStdin bool
	}{
		{"codex", "codex", Request{Prompt: "fix it"},
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "fix it"}, "", false},
		{"codex model, args, resume", "codex", Request{Prompt: "fix it", Model: "gpt-5", SessionID: "th-1", Args: []string{"-c", "model_reasoning_effort=high"}},
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "--model", "gpt-5",
				"-c", "model_reasoning_effort=high", "resume", "th-1", "fix it"}, "", false},
		{"codex prompt starting with a dash goes on stdin", "codex", Request{Prompt: "- [ ] fix it"},
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "-"}, "- [ ] fix it", true},
		{"codex long prompt goes on stdin", "codex", Request{Prompt: long},
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "-"}, long, true},
		{"gemini", "gemini", Request{Prompt: "fix it"},
			[]string{"gemini", "-p", "fix it", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust"}, "", false},
		{"gemini model, resume, args", "gemini", Request{Prompt: "fix it", Model: "gemini-2.5-pro", SessionID: "s-9", Args: []string{"--debug"}},
			[]string{"gemini", "-p", "fix it", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust",
				"-m", "gemini-2.5-pro", "--resume", "s-9", "--debug"}, "", false},
		{"gemini long prompt goes on stdin", "gemini", Request{Prompt: long},
			[]string{"gemini", "-p", stdinPrompt, "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust"}, long, true},
		{"opencode", "opencode", Request{Prompt: "- [ ] fix it"},
			[]string{"opencode", "run", "--format", "json", "--", "- [ ] fix it"}, "", false},
		{"opencode model, session, args", "opencode", Request{Prompt: "fix it", Model: "anthropic/claude-sonnet-4-5", SessionID: "ses_1", Args: []string{"--agent", "build"}},
			[]string{"opencode", "run", "--format", "json", "-m", "anthropic/claude-sonnet-4-5", "--session", "ses_1",
				"--agent", "build", "--", "fix it"}, "", false},
		{"aider with the prompt file", "aider", Request{Prompt: "fix it", PromptFile: "/run/prompt.md", Model: "sonnet", Args: []string{"--no-git"}},
			[]string{"aider", "--message-file", "/run/prompt.md", "--yes-always", "--no-auto-commits", "--no-pretty", "--no-stream",
				"--model", "sonnet", "--no-git"}, "", false},
		{"aider with the prompt text; sessions are not supported", "aider", Request{Prompt: "-fix it", SessionID: "ignored"},
			[]string{"aider", "--message=-fix it", "--yes-always", "--no-auto-commits", "--no-pretty", "--no-stream"}, "", false},
		{"command with {prompt} inside an argument", "command", Request{Prompt: "P", Command: []string{"agent", "--task={prompt}", "x"}},
			[]string{"agent", "--task=P", "x"}, "", false},
		{"command with {prompt_file}", "command", Request{Prompt: "P", PromptFile: "/tmp/p.md", Command: []string{"agent", "-f", "{prompt_file}"}},
			[]string{"agent", "-f", "/tmp/p.md"}, "", false},
		{"command without placeholders reads stdin", "command", Request{Prompt: "P", Command: []string{"agent", "--go"}},
			[]string{"agent", "--go"}, "P", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := mustLookup(t, tt.kind).Invocation(tt.req)
			require.NoError(t, err)
			assert.Equal(t, tt.argv, inv.Argv)
			assert.Equal(t, tt.wantStdin, inv.UseStdin)
			assert.Equal(t, tt.stdin, inv.Stdin)
			assert.Empty(t, inv.Env)
		})
	}
}

func TestInvocationErrors(t *testing.T) {
	_, err := mustLookup(t, "command").Invocation(Request{Prompt: "P"})
	require.Error(t, err)
	assert.Equal(t, stopreasons.ConfigInvalid, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), "agent.command")

	_, err = mustLookup(t, "command").Invocation(Request{Prompt: "P", Command: []string{"a", "{prompt_file}"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "{prompt_file}")

	_, err = mustLookup(t, "aider").Invocation(Request{Prompt: strings.Repeat("y", maxArgPrompt+1)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "prompt file")
}
