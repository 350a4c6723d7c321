package tests

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/state"
)

// tryShell defines `try NAME CMD...`: it runs CMD in a subshell and prints
// `TRY NAME ok`, or `TRY NAME ERRNO` named from the error the shell
// printed (the C library's text of the errno), so the test reads what the
// agent saw.
const tryShell = `try() {
	name=$1; shift
	if err=$( ( eval "$*" ) 2>&1 >/dev/null ); then echo "TRY $name ok"; return; fi
	case "$err" in
	*"Permission denied"*|*"permission denied"*) e=EACCES ;;
	*"Read-only file system"*) e=EROFS ;;
	*"Operation not permitted"*|*"must be superuser"*) e=EPERM ;;
	*) e="other:$(echo "$err" | tr '\n' ' ')" ;;
	esac
	echo "TRY $name $e"
}
`

func skipWithoutSandbox(t *testing.T) {
	t.Helper()
	if sandbox.ABI() == 0 {
		t.Skipf("this kernel (%s) has no Landlock", sandbox.Kernel())
	}
}

// sandboxRepo is a committed repository with a root file, a directory and
// a vendor directory, and a HOME outside it holding a .bashrc.
func sandboxRepo(t *testing.T) (repo, home string, env []string) {
	t.Helper()
	base := t.TempDir()
	repo, home = filepath.Join(base, "repo"), filepath.Join(base, "home")
	for _, d := range []string{filepath.Join(repo, "src"), filepath.Join(repo, "vendor"), home} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	files := map[string]string{
		"go.mod": "module example.com/x\n\ngo 1.22\n", "src/a.txt": "a\n", "vendor/v.txt": "v\n",
		"../home/.bashrc": "original\n",
	}
	for p, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644))
	}
	env = append(testEnv(repo), "HOME="+home)
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", a, out)
	}
	return repo, home, env
}

// runSandboxed runs `runr run` with args in repo and returns its exit code
// and output.
func runSandboxed(t *testing.T, repo string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"run"}, args...)...)
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("runr: %v", err)
	return -1, ""
}

// agentTries is the TRY lines of the run's first agent call, by name.
func agentTries(t *testing.T, runDir string, st *state.State) map[string]string {
	t.Helper()
	require.NotEmpty(t, st.Milestones[0].Attempts)
	f, err := os.Open(filepath.Join(runDir, st.Milestones[0].Attempts[0].Log))
	require.NoError(t, err)
	defer f.Close()
	tries := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "TRY "); ok {
			name, result, _ := strings.Cut(rest, " ")
			tries[name] = result
		}
	}
	return tries
}

// sandboxEvent is the run's `sandbox` timeline event.
func sandboxEvent(t *testing.T, runDir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "timeline.jsonl"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if e.Type == "sandbox" {
			return e.Data
		}
	}
	t.Fatalf("no sandbox event in the timeline:\n%s", b)
	return nil
}

func writeAgent(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(p, []byte(tryShell+body), 0o755))
	return p
}

// TestSandboxOnInTheCheckout: an agent under --sandbox=on in the user's
// checkout cannot write outside the work tree (EACCES), into HOME, or into
// .git or a scope.deny directory (bound read-only: EROFS), neither itself
// nor through grandchildren nor after re-executing itself, and cannot
// undo the binds; it can write the work tree's existing directories and
// its TMPDIR, replace a root file by a rename, apply a real patch to it,
// and create a new top-level file. The run completes and commits its
// checkpoint.
func TestSandboxOnInTheCheckout(t *testing.T) {
	skipWithoutSandbox(t)
	repo, home, env := sandboxRepo(t)
	patch := filepath.Join(t.TempDir(), "go.mod.patch")
	require.NoError(t, os.WriteFile(patch, []byte(`--- a/go.mod
+++ b/go.mod
@@ -1,3 +1,3 @@
 module example.com/y
 
-go 1.22
+go 1.23
`), 0o644))
	agent := writeAgent(t, `
tries() {
	try outside$1 'echo x > ../outside.txt'
	try bashrc$1 'echo x >> "$HOME/.bashrc"'
	try hook$1 'echo x > .git/hooks/pre-commit'
	try gitconfig$1 'echo x >> .git/config'
	try vendor$1 'echo x >> vendor/v.txt'
	try grandchild$1 'sh -c "sh -c \"echo g > ../grandchild.txt\""'
	try grandchildgit$1 'sh -c "sh -c \"echo g >> .git/config\""'
}
if [ "$1" = again ]; then
	tries _reexec
	echo "RUNR_STATUS: done"
	exit 0
fi
tries ""
try src 'echo b >> src/a.txt'
try tmp 'echo t > "$TMPDIR/t" && test -f "$TMPDIR/t"'
try tmpdir 'case "$TMPDIR" in "$PWD"*) false;; /*) true;; *) false;; esac'
try rename 'sed "s/example.com\/x/example.com\/y/" go.mod > go.mod.tmp && mv go.mod.tmp go.mod'
try apply 'git apply '"'`+patch+`'"
try newtop 'echo n > NEW.txt'
try umount 'umount .git'
try remount 'mount -o remount,rw .git'
try umountvendor 'umount vendor'
try gitconfig_after 'echo x >> .git/config'
try signal 'kill -0 $PPID'
exec sh "$0" again
`)
	code, out := runSandboxed(t, repo, append(env, "RUNR_CHECKPOINT_COMMIT=true", `RUNR_SCOPE_DENY=["vendor"]`),
		"--prompt", "try the sandbox", "--sandbox=on", "--", "sh", agent)
	require.Equal(t, 0, code, "runr output:\n%s", out)

	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	st := readRunState(t, repo)
	assert.Equal(t, "complete", string(st.StopReason.Code))
	tries := agentTries(t, runDir, st)
	for _, suffix := range []string{"", "_reexec"} {
		assert.Equal(t, "EACCES", tries["outside"+suffix], "outside"+suffix)
		assert.Equal(t, "EACCES", tries["bashrc"+suffix], "bashrc"+suffix)
		assert.Equal(t, "EROFS", tries["hook"+suffix], "hook"+suffix)
		assert.Equal(t, "EROFS", tries["gitconfig"+suffix], "gitconfig"+suffix)
		assert.Equal(t, "EROFS", tries["vendor"+suffix], "vendor"+suffix)
		assert.Equal(t, "EACCES", tries["grandchild"+suffix], "grandchild"+suffix)
		assert.Equal(t, "EROFS", tries["grandchildgit"+suffix], "grandchildgit"+suffix)
	}
	for _, name := range []string{"src", "tmp", "tmpdir", "rename", "apply", "newtop"} {
		assert.Equal(t, "ok", tries[name], name)
	}
	for _, name := range []string{"umount", "umountvendor", "signal"} {
		assert.Equal(t, "EPERM", tries[name], name)
	}
	// mount(8) words the EPERM of mount(2) "permission denied".
	assert.Contains(t, []string{"EPERM", "EACCES"}, tries["remount"], "remount")
	assert.Equal(t, "EROFS", tries["gitconfig_after"], "the binds hold after the agent tried to undo them")

	assert.NoFileExists(t, filepath.Join(repo, "..", "outside.txt"))
	assert.NoFileExists(t, filepath.Join(repo, "..", "grandchild.txt"))
	assert.NoFileExists(t, filepath.Join(repo, ".git", "hooks", "pre-commit"))
	b, err := os.ReadFile(filepath.Join(home, ".bashrc"))
	require.NoError(t, err)
	assert.Equal(t, "original\n", string(b))
	b, err = os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "\nx\n")
	b, err = os.ReadFile(filepath.Join(repo, "vendor", "v.txt"))
	require.NoError(t, err)
	assert.Equal(t, "v\n", string(b))
	b, err = os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	assert.Equal(t, "module example.com/y\n\ngo 1.23\n", string(b), "renamed over, then patched")

	// The checkpoint commit holds the agent's work.
	assert.Equal(t, "2", gitOut(t, repo, env, "rev-list", "--count", "HEAD"))
	assert.Contains(t, gitOut(t, repo, env, "show", "--name-only", "--format=", "HEAD"), "NEW.txt")

	ev := sandboxEvent(t, runDir)
	assert.Equal(t, "on", ev["mode"])
	assert.Equal(t, true, ev["confined"])
	assert.Equal(t, true, ev["namespace"])
	assert.EqualValues(t, sandbox.ABI(), ev["abi"])
	assert.ElementsMatch(t, []any{filepath.Join(repo, ".git"), filepath.Join(repo, "vendor")}, ev["read_only"])
	writable, _ := ev["writable"].([]any)
	require.NotEmpty(t, writable)
	assert.Equal(t, repo, writable[0])
	// The run's TMPDIR is gone with the run.
	require.GreaterOrEqual(t, len(writable), 2)
	tmp, _ := writable[1].(string)
	assert.Contains(t, tmp, "runr-"+st.RunID)
	assert.NoDirExists(t, tmp)
}

// TestSandboxOnInAWorktree: with --worktree the git dirs lie outside the
// work tree and Landlock alone keeps the agent out of them, out of the
// checkout and out of HOME; the run completes with its checkpoint commit.
func TestSandboxOnInAWorktree(t *testing.T) {
	skipWithoutSandbox(t)
	repo, home, env := sandboxRepo(t)
	agent := writeAgent(t, `
common=$(git rev-parse --git-common-dir)
gitdir=$(git rev-parse --git-dir)
try outside 'echo x > ../outside.txt'
try checkout 'echo x >> "`+repo+`/go.mod"'
try bashrc 'echo x >> "$HOME/.bashrc"'
try hook 'echo x > "$common/hooks/pre-commit"'
try gitconfig 'echo x >> "$common/config"'
try worktreegit 'echo x > "$gitdir/HEAD"'
try src 'echo b >> src/a.txt'
try newtop 'echo n > NEW.txt'
try tmp 'echo t > "$TMPDIR/t"'
try gitfile 'echo "gitdir: /tmp/elsewhere" > .git'
echo "RUNR_STATUS: done"
`)
	code, out := runSandboxed(t, repo, env, "--prompt", "try the sandbox", "--worktree", "--sandbox=on", "--", "sh", agent)
	require.Equal(t, 0, code, "runr output:\n%s", out)
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	st := readRunState(t, repo)
	tries := agentTries(t, runDir, st)
	for _, name := range []string{"outside", "checkout", "bashrc", "hook", "gitconfig", "worktreegit"} {
		assert.Equal(t, "EACCES", tries[name], name)
	}
	// The worktree's .git file, which git commands run in the worktree
	// later (a shell prompt's, git worktree remove's) would follow to a git
	// dir of the agent's making, with its config and hooks: bound
	// read-only like a checkout's .git.
	assert.Equal(t, "EROFS", tries["gitfile"], "gitfile")
	b, err := os.ReadFile(filepath.Join(st.Worktree, ".git"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "elsewhere")
	for _, name := range []string{"src", "newtop", "tmp"} {
		assert.Equal(t, "ok", tries[name], name)
	}
	b, err = os.ReadFile(filepath.Join(home, ".bashrc"))
	require.NoError(t, err)
	assert.Equal(t, "original\n", string(b))
	assert.NoFileExists(t, filepath.Join(repo, ".git", "hooks", "pre-commit"))
	b, err = os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	assert.Equal(t, "module example.com/x\n\ngo 1.22\n", string(b))
	assert.Contains(t, gitOut(t, repo, env, "show", "--name-only", "--format=", st.Branch), "NEW.txt")

	ev := sandboxEvent(t, runDir)
	assert.Equal(t, true, ev["confined"])
	assert.Equal(t, true, ev["namespace"], "the worktree's .git file is bound read-only")
}

// TestSandboxHelperFailureStops69: when the helper cannot set up the
// sandbox at call time (here a scope.deny directory that a verify command
// removed after the first call), the run stops with environment_invalid
// and the helper's message, not with an agent failure.
func TestSandboxHelperFailureStops69(t *testing.T) {
	skipWithoutSandbox(t)
	repo, _, env := sandboxRepo(t)
	code, out := runSandboxed(t, repo, append(env, `RUNR_SCOPE_DENY=["vendor"]`), "--prompt", "go", "--sandbox=on",
		"--verify", "rm -rf vendor && false", "--", "sh", "-c", "echo working")
	require.Equal(t, 69, code, "runr output:\n%s", out)
	st := readRunState(t, repo)
	assert.Equal(t, "environment_invalid", string(st.StopReason.Code))
	assert.Contains(t, st.StopReason.Message, "runr: sandbox: bind "+filepath.Join(repo, "vendor"))
	require.Len(t, st.Milestones[0].Attempts, 2)
	assert.NotEqual(t, state.OutcomeFailed, st.Milestones[0].Attempts[1].Outcome, "not an agent failure")
}

// TestSandboxOffLeavesTheAgentAlone: without --sandbox the agent writes
// where its user may, as before, and no sandbox event is recorded.
func TestSandboxOffLeavesTheAgentAlone(t *testing.T) {
	repo, _, env := sandboxRepo(t)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	code, out := runSandboxed(t, repo, env, "--prompt", "go", "--", "sh", "-c", "echo x > "+outside+"; echo RUNR_STATUS: done")
	require.Equal(t, 0, code, "runr output:\n%s", out)
	assert.FileExists(t, outside)
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(runDir, "timeline.jsonl"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"type":"sandbox"`)
}

// TestSandboxDoctor: `runr doctor` shows the Landlock ABI, that user
// namespaces work, and what a sandboxed run of this checkout may write;
// `runr doctor <id>` shows the confinement the run got.
func TestSandboxDoctor(t *testing.T) {
	skipWithoutSandbox(t)
	repo, _, env := sandboxRepo(t)
	env = append(env, "RUNR_SANDBOX_MODE=on", `RUNR_AGENT_COMMAND=["sh","-c","echo RUNR_STATUS: done"]`)
	doctor := func(args ...string) map[string]any {
		cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"doctor", "--json"}, args...)...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.Output()
		require.NoError(t, err, "%s", out)
		var v map[string]any
		require.NoError(t, json.Unmarshal(out, &v))
		return v
	}
	var sb map[string]any
	for _, c := range doctor()["checks"].([]any) {
		if c := c.(map[string]any); c["name"] == "sandbox" {
			assert.Equal(t, true, c["ok"])
			assert.Contains(t, c["detail"], "user namespaces: yes")
			sb, _ = c["sandbox"].(map[string]any)
		}
	}
	require.NotNil(t, sb, "a sandbox check with its plan")
	assert.Equal(t, true, sb["namespace"])
	assert.Equal(t, []any{filepath.Join(repo, ".git")}, sb["read_only"])
	assert.Contains(t, sb["writable"], repo)

	code, out := runSandboxed(t, repo, env, "--prompt", "go")
	require.Equal(t, 0, code, out)
	rec, _ := doctor("latest")["sandbox"].(map[string]any)
	require.NotNil(t, rec, "doctor <id> shows the recorded confinement")
	assert.Equal(t, "on", rec["mode"])
	assert.Equal(t, true, rec["namespace"])
}

// TestDoctorJSONSandboxMatchesItsText: with sandbox.mode off (the
// default), doctor --json gives the same Landlock ABI and kernel as its
// text, on any kernel, Landlock or not.
func TestDoctorJSONSandboxMatchesItsText(t *testing.T) {
	repo := newRepo(t)
	_, out, stderr := runrOut(t, repo, "doctor", "--json")
	var rep struct {
		Checks []struct {
			Name    string `json:"name"`
			Detail  string `json:"detail"`
			Sandbox *struct {
				ABI    *int    `json:"abi"`
				Kernel *string `json:"kernel"`
			} `json:"sandbox"`
		} `json:"checks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout %s stderr %s", out, stderr)
	for _, c := range rep.Checks {
		if c.Name != "sandbox" {
			continue
		}
		require.NotNil(t, c.Sandbox, "the sandbox check has its plan: %s", out)
		require.NotNil(t, c.Sandbox.ABI)
		require.NotNil(t, c.Sandbox.Kernel)
		want := fmt.Sprintf("Landlock ABI %d (kernel %s)", *c.Sandbox.ABI, *c.Sandbox.Kernel)
		if *c.Sandbox.ABI == 0 {
			want = fmt.Sprintf("no Landlock (kernel %s)", *c.Sandbox.Kernel)
		}
		assert.NotEmpty(t, *c.Sandbox.Kernel)
		assert.True(t, strings.HasPrefix(c.Detail, want), "json %q, text %q", want, c.Detail)
		assert.Equal(t, sandbox.ABI(), *c.Sandbox.ABI, "the kernel's own ABI")
		return
	}
	t.Fatalf("no sandbox check: %s", out)
}

// TestSandboxWorktreeDenyDir: in a --worktree run a scope.deny directory
// is bound read-only in a namespace, and so is the worktree's .git file.
func TestSandboxWorktreeDenyDir(t *testing.T) {
	skipWithoutSandbox(t)
	repo, _, env := sandboxRepo(t)
	agent := writeAgent(t, `
try vendor 'echo x >> vendor/v.txt'
try gitfile 'echo "gitdir: /tmp" > .git'
try src 'echo b >> src/a.txt'
echo "RUNR_STATUS: done"
`)
	code, out := runSandboxed(t, repo, append(env, `RUNR_SCOPE_DENY=["vendor/**"]`), "--prompt", "go", "--worktree", "--sandbox=on", "--", "sh", agent)
	require.Equal(t, 0, code, "runr output:\n%s", out)
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	st := readRunState(t, repo)
	tries := agentTries(t, runDir, st)
	assert.Equal(t, map[string]string{"vendor": "EROFS", "gitfile": "EROFS", "src": "ok"}, tries)
	ev := sandboxEvent(t, runDir)
	assert.Equal(t, true, ev["namespace"])
	assert.ElementsMatch(t, []any{filepath.Join(st.Worktree, ".git"), filepath.Join(st.Worktree, "vendor")}, ev["read_only"])
}

// TestSandboxOnResume: a resumed run is confined again, decided anew.
func TestSandboxOnResume(t *testing.T) {
	skipWithoutSandbox(t)
	repo, _, env := sandboxRepo(t)
	agent := writeAgent(t, `
try outside$RUNR_ITERATION 'echo x > ../outside.txt'
if [ "$RUNR_ITERATION" = 1 ]; then echo "RUNR_STATUS: blocked"; else echo "RUNR_STATUS: done"; fi
`)
	code, out := runSandboxed(t, repo, env, "--prompt", "go", "--sandbox=on", "--", "sh", agent)
	require.Equal(t, 30, code, "runr output:\n%s", out)
	cmd := exec.Command(filepath.Join(binDir, "runr"), "resume", "latest")
	cmd.Dir, cmd.Env = repo, env
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	tl, err := os.ReadFile(filepath.Join(runDir, "timeline.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(tl), `"type":"sandbox"`), "decided at the start and at the resume")
	log, err := os.ReadFile(filepath.Join(runDir, readRunState(t, repo).Milestones[0].Attempts[1].Log))
	require.NoError(t, err)
	assert.Contains(t, string(log), "TRY outside2 EACCES")
	assert.NoFileExists(t, filepath.Join(repo, "..", "outside.txt"))
}

// TestSandboxAsAnOrdinaryUser: run by an unprivileged user, runr's helper
// still sets up the namespace (its capability there is an ambient one)
// and the agent ends up with none. It needs root to become that user
// (setpriv), so it runs where the tests run as root.
func TestSandboxAsAnOrdinaryUser(t *testing.T) {
	skipWithoutSandbox(t)
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run runr as another user")
	}
	repo, home, env := sandboxRepo(t)
	base := filepath.Dir(repo)
	agent := filepath.Join(base, "agent.sh")
	require.NoError(t, os.WriteFile(agent, []byte(tryShell+`
try gitconfig 'echo x >> .git/config'
try outside 'echo x > ../outside.txt'
try src 'echo b >> src/a.txt'
echo "CAPS $(grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status | awk '{print $2}' | tr '\n' ' ')"
echo "RUNR_STATUS: done"
`), 0o644))
	const nobody = "65534"
	for _, dir := range []string{base, filepath.Dir(base)} {
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	chown := exec.Command("chown", "-R", nobody+":"+nobody, repo, home)
	out, err := chown.CombinedOutput()
	require.NoError(t, err, "%s", out)
	cmd := exec.Command(setpriv, "--reuid="+nobody, "--regid="+nobody, "--clear-groups",
		filepath.Join(binDir, "runr"), "run", "--prompt", "go", "--sandbox=on", "--", "sh", agent)
	cmd.Dir, cmd.Env = repo, env
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	st := readRunState(t, repo)
	tries := agentTries(t, runDir, st)
	assert.Equal(t, map[string]string{"gitconfig": "EROFS", "outside": "EACCES", "src": "ok"}, tries)
	log, err := os.ReadFile(filepath.Join(runDir, st.Milestones[0].Attempts[0].Log))
	require.NoError(t, err)
	assert.Contains(t, string(log), "CAPS 0000000000000000 0000000000000000 0000000000000000 0000000000000000 ", "no capability left to the agent")
}
