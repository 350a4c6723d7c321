package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/tests/testenv"
)

// tmuxTerm is a real terminal for runr watch: a private tmux server, one
// session of a fixed size running runr watch, keys sent with send-keys and
// the screen read with capture-pane.
type tmuxTerm struct {
	bin, sock, session string
	env                []string
}

func (tm *tmuxTerm) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(tm.bin, append([]string{"-S", tm.sock}, args...)...)
	cmd.Env = tm.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "tmux %v: %s", args, out)
	return string(out)
}

func (tm *tmuxTerm) screen(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(tm.bin, "-S", tm.sock, "capture-pane", "-p", "-t", tm.session)
	cmd.Env = tm.env
	out, _ := cmd.Output()
	return string(out)
}

func (tm *tmuxTerm) keys(t *testing.T, keys ...string) {
	t.Helper()
	tm.run(t, append([]string{"send-keys", "-t", tm.session}, keys...)...)
}

// waitScreen polls the screen until it holds every one of want.
func (tm *tmuxTerm) waitScreen(t *testing.T, what string, want ...string) string {
	t.Helper()
	var last string
	ok := testenv.Poll(testenv.WaitLimit, func() bool {
		last = tm.screen(t)
		for _, w := range want {
			if !strings.Contains(last, w) {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("the screen never showed %s (%q); it shows:\n%s", what, want, last)
	}
	return last
}

// TestWatchInATerminal drives runr watch in a real terminal: two live runs
// show with their closest stop rule; Enter follows the selected run's
// transcript and Esc comes back; s then y stops that run the way runr stop
// does (it ends with user_stopped, exit 130); q quits and the other run is
// still running.
func TestWatchInATerminal(t *testing.T) {
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed: the terminal test of runr watch needs it")
	}
	repo := newRepo(t)
	gate := filepath.Join(repo, ".git", "gate-stop")
	// Created first, so listed second: the test selects it with ↓.
	target := startRunr(t, repo, nil, "run", "--run-id", "watch-stop", "--max-ticks", "4", "--force-parallel",
		"--prompt", "stop me", "--", "fakeagent", "--do", "ready; wait-for "+gate+"; print working")
	target.waitReady(t, 1)
	keeper := startRunr(t, repo, nil, "run", "--run-id", "watch-keep", "--force-parallel",
		"--prompt", "keep me", "--", "fakeagent", "--do", "ready; hang")
	keeper.waitReady(t, 2)

	dir := t.TempDir()
	exitFile := filepath.Join(dir, "exit")
	tm := &tmuxTerm{bin: tmuxBin, sock: filepath.Join(dir, "tmux.sock"), session: "watch",
		env: append(testEnv(repo), "TERM=xterm-256color")}
	script := "cd '" + repo + "' && runr watch; echo $? > '" + exitFile + "'"
	tm.run(t, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30", "-s", tm.session, "sh", "-c", script)
	t.Cleanup(func() {
		exec.Command(tm.bin, "-S", tm.sock, "kill-server").Run()
	})

	// Both live runs, newest first and selected, each with its closest rule.
	screen := tm.waitScreen(t, "both live runs", "runr watch · 2 live", "> watch-keep  running  milestone 1/1  implement",
		"  watch-stop  running  milestone 1/1  implement", "closest  budget.max_ticks 25% · 1 tick (limit 4)")
	assert.Contains(t, screen, "goal     stop me")
	assert.Contains(t, screen, "activity agent started (fakeagent)")
	for _, l := range strings.Split(screen, "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 100, "no line is wider than the terminal")
	}

	tm.keys(t, "Down")
	tm.waitScreen(t, "the second run selected", "> watch-stop  running")

	// Enter: its transcript, live.
	tm.keys(t, "Enter")
	tm.waitScreen(t, "the transcript", "run watch-stop · transcript · following", "run started · task --prompt · 1 milestone",
		`tick 1 · milestone 1/1 "stop me" · implement`)
	tm.keys(t, "Escape")
	tm.waitScreen(t, "the list again", "runr watch · 2 live", "> watch-stop  running")

	// A terminal made too narrow says so on one line; wide again, the list.
	tm.run(t, "resize-window", "-t", tm.session, "-x", "30")
	tm.waitScreen(t, "the narrow notice", "needs 40 columns, has 30")
	tm.run(t, "resize-window", "-t", tm.session, "-x", "100")
	tm.waitScreen(t, "the list at 100 columns", "runr watch · 2 live", "> watch-stop  running")

	// s asks first; y stops it as runr stop does.
	tm.keys(t, "s")
	tm.waitScreen(t, "the confirmation", "stop run watch-stop? y/n")
	tm.keys(t, "y")
	tm.waitScreen(t, "runr stop's answer", "Asked run watch-stop (pid ")
	require.FileExists(t, filepath.Join(repo, ".git", "runr", "runs", "watch-stop", "stop-request"))
	// The run stops after its current tick: let the agent's call end.
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	assert.Equal(t, 130, target.wait(t, testenv.WaitLimit), "stderr: %s", &target.stderr)
	st := readWatchedRunState(t, repo, "watch-stop")
	reason, _ := st["stop_reason"].(map[string]any)
	require.NotNil(t, reason, "state.json records the stop")
	assert.Equal(t, "user_stopped", reason["code"])
	assert.EqualValues(t, 130, reason["exit_code"])
	tm.waitScreen(t, "the stopped run below the live one", "runr watch · 1 live · 1 recent", "watch-stop  stopped  user_stopped (exit 130)")

	// q quits, and leaves the other run running.
	tm.keys(t, "q")
	testenv.WaitFor(t, "runr watch to exit", testenv.FileContains(exitFile, "\n"))
	b, err := os.ReadFile(exitFile)
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(string(b)), "runr watch exits 0 on q")
	select {
	case <-keeper.done:
		t.Fatalf("the other run stopped (exit %d) when runr watch quit", keeper.exitCode)
	default:
	}
	assert.NoFileExists(t, filepath.Join(repo, ".git", "runr", "runs", "watch-keep", "stop-request"))
	code, out, _ := runrCmd(t, repo, "status", "--active")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "watch-keep")

	keeper.signal(t, syscall.SIGINT)
	assert.Equal(t, 130, keeper.wait(t, testenv.WaitLimit))
}

func readWatchedRunState(t *testing.T, repo, id string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".git", "runr", "runs", id, "state.json"))
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(b, &st), "state.json must parse")
	return st
}
