package agents

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runLikeSupervisor runs an invocation as the supervisor does: its own
// process group, stdin piped or /dev/null, stdout fed line by line to the
// parser, the group killed as soon as the parser aborts.
func runLikeSupervisor(t *testing.T, inv Invocation, p Parser) (Result, bool) {
	t.Helper()
	cmd := exec.Command(inv.Argv[0], inv.Argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), inv.Env...)
	if inv.UseStdin {
		cmd.Stdin = strings.NewReader(inv.Stdin)
	}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })

	var out strings.Builder
	aborted := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if p.Line(sc.Bytes()) {
			aborted = true
			require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
			break
		}
	}
	err = cmd.Wait()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode() // -1 when killed by a signal
	} else {
		require.NoError(t, err)
	}
	return p.Finish(code, []byte(out.String())), aborted
}

func TestCommandAgentProcesses(t *testing.T) {
	prompt := "Do the work.\nWhen done print\n<promise>COMPLETE</promise>"
	tests := []struct {
		name    string
		command []string
		isError bool
		signal  Signal
		sigText string
		final   string
	}{
		{"prompt on stdin, blocked", []string{"sh", "-c", "cat >/dev/null; echo working; echo 'RUNR_STATUS: blocked: need creds'"},
			false, SignalBlocked, "need creds", "working\nRUNR_STATUS: blocked: need creds\n"},
		{"an agent echoing its stdin prompt does not signal", []string{"cat"},
			false, SignalNone, "", prompt + "\n"},
		{"{prompt} substituted, echoed, non-zero exit", []string{"sh", "-c", `printf '%s\n' "$1"; exit 4`, "sh", "{prompt}"},
			true, SignalNone, "", prompt + "\n"},
	}
	promptFile := filepath.Join(t.TempDir(), "prompt.md")
	require.NoError(t, os.WriteFile(promptFile, []byte(prompt), 0o600))
	a := mustLookup(t, "command")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{Prompt: prompt, PromptFile: promptFile, Command: tt.command, Dir: t.TempDir()}
			inv, err := a.Invocation(req)
			require.NoError(t, err)
			res, aborted := runLikeSupervisor(t, inv, a.NewParser(req))
			assert.False(t, aborted)
			assert.Equal(t, tt.isError, res.IsError)
			assert.Equal(t, tt.signal, res.Signal)
			assert.Equal(t, tt.sigText, res.SignalText)
			if tt.final != "" {
				assert.Equal(t, tt.final, res.FinalText)
			}
			if tt.isError {
				assert.Contains(t, res.ErrorText, "exited with code 4")
			}
		})
	}
}

// A promise the prompt mentions only inside a sentence still signals when
// the agent prints it on a line of its own; {prompt_file} names the file.
func TestCommandAgentPromiseWithPromptFile(t *testing.T) {
	prompt := "Do the work. When done print <promise>COMPLETE</promise> on a line of its own."
	promptFile := filepath.Join(t.TempDir(), "prompt.md")
	require.NoError(t, os.WriteFile(promptFile, []byte(prompt), 0o600))
	req := Request{Prompt: prompt, PromptFile: promptFile,
		Command: []string{"sh", "-c", `cat "$1"; echo; echo '<promise>COMPLETE</promise>'`, "sh", "{prompt_file}"}}
	a := mustLookup(t, "command")
	inv, err := a.Invocation(req)
	require.NoError(t, err)
	assert.False(t, inv.UseStdin)
	res, _ := runLikeSupervisor(t, inv, a.NewParser(req))
	assert.False(t, res.IsError)
	assert.Equal(t, SignalDone, res.Signal)
	assert.Equal(t, prompt+"\n<promise>COMPLETE</promise>\n", res.FinalText)
}

// A claude that prints the auth api_retry and then sits in its backoff is
// stopped as soon as the retry line arrives: its result line, printed only
// after the backoff, is never read.
func TestClaudeAuthRetryAbortsTheProcess(t *testing.T) {
	rec := load(t, "claude", "auth_401", ".out")
	lines := strings.SplitAfter(string(rec.out), "\n")
	dir := t.TempDir()
	before := filepath.Join(dir, "before.jsonl")
	after := filepath.Join(dir, "after.jsonl")
	require.NoError(t, os.WriteFile(before, []byte(lines[0]+lines[1]), 0o600))
	require.NoError(t, os.WriteFile(after, []byte(strings.Join(lines[2:], "")), 0o600))

	inv := Invocation{Argv: []string{"sh", "-c", `cat "$1"; sleep 60; cat "$2"`, "sh", before, after}}
	res, aborted := runLikeSupervisor(t, inv, mustLookup(t, "claude").NewParser(Request{Prompt: "do the task"}))
	assert.True(t, aborted)
	assert.True(t, res.IsError)
	assert.Equal(t, ClassAuth, res.Class)
	assert.Equal(t, "094860d7-fdb6-4a63-bd8c-4a75ae0f418a", res.SessionID)
	assert.NotContains(t, res.ErrorText, "Invalid API key", "the result line was never read")
}
