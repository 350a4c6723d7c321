package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// mountSetattr is a program that calls mount_setattr(2) to clear the
// read-only flag of the mount at its argument (.git's bind), which
// Landlock does not mediate: only a capability in the agent's namespace
// lets it through. It prints the errno's name, or "ok".
const mountSetattr = `import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64), ("prop", ctypes.c_uint64), ("userns", ctypes.c_uint64)]
a = Attr(0, 0x1, 0, 0)  # MOUNT_ATTR_RDONLY cleared
nr = {"x86_64": 442, "aarch64": 442}[os.uname().machine]
r = libc.syscall(nr, -100, sys.argv[1].encode(), 0, ctypes.byref(a), ctypes.sizeof(a))
print("ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
`

// TestSandboxLeaksNothing plays a confined agent against what the sandbox
// hands it, as root and as an ordinary user: no capability (none in the
// bounding set either, so a root program run next gets none back, and
// mount_setattr cannot make .git writable again), no terminal of the
// user's (a pseudo-terminal of the test's stands for one), and no
// descriptor runr inherited beyond stdin, stdout and stderr (fd 9, open on
// a file outside the sandbox, as a caller's shell may leave one).
func TestSandboxLeaksNothing(t *testing.T) {
	skipWithoutSandbox(t)
	// The system's python, which every user may run (a per-user install
	// under root's home is not).
	python, pyErr := "/usr/bin/python3", error(nil)
	if _, err := os.Stat(python); err != nil {
		pyErr = err
	}
	for _, user := range []string{"root", "nobody"} {
		t.Run(user, func(t *testing.T) {
			setpriv, err := exec.LookPath("setpriv")
			switch {
			case user == "root" && os.Geteuid() != 0:
				t.Skip("runs as root only where the tests run as root")
			case user == "nobody" && (os.Geteuid() != 0 || err != nil):
				t.Skip("needs root and setpriv to run runr as another user")
			}
			repo, home, env := sandboxRepo(t)
			base := filepath.Dir(repo)
			for _, dir := range []string{base, filepath.Dir(base)} {
				require.NoError(t, os.Chmod(dir, 0o755))
			}
			// A terminal of the user's: the test's own pseudo-terminal,
			// writable by the agent's user.
			ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
			require.NoError(t, err)
			defer ptmx.Close()
			require.NoError(t, unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0))
			n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
			require.NoError(t, err)
			pts := "/dev/pts/" + strconv.Itoa(n)
			require.NoError(t, os.Chmod(pts, 0o666))
			// fd 9: a file outside the sandbox, open for writing.
			leak := filepath.Join(base, "leak.txt")
			require.NoError(t, os.WriteFile(leak, nil, 0o666))
			lf, err := os.OpenFile(leak, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			defer lf.Close()
			script := filepath.Join(base, "setattr.py")
			require.NoError(t, os.WriteFile(script, []byte(mountSetattr), 0o644))
			agent := filepath.Join(base, "agent.sh")
			require.NoError(t, os.WriteFile(agent, []byte(tryShell+`
try pts 'echo "\033]0;owned\007" > `+pts+`'
try ptmx 'exec 3<>/dev/ptmx'
try fd9 'echo leaked >&9'
echo "FDS $(ls /proc/self/fd | sort -n | tr '\n' ' ')"
echo "CAPS $(grep -E '^Cap(Inh|Prm|Eff|Amb|Bnd)' /proc/self/status | awk '{print $2}' | tr '\n' ' ')"
if [ -n "$PYTHON" ]; then echo "SETATTR $("$PYTHON" `+script+` .git)"; fi
try gitconfig 'echo x >> .git/config'
echo "RUNR_STATUS: done"
`), 0o644))
			argv := []string{filepath.Join(binDir, "runr"), "run", "--prompt", "go", "--sandbox=on", "--", "sh", agent}
			if user == "nobody" {
				const nobody = "65534"
				out, err := exec.Command("chown", "-R", nobody+":"+nobody, repo, home).CombinedOutput()
				require.NoError(t, err, "%s", out)
				argv = append([]string{setpriv, "--reuid=" + nobody, "--regid=" + nobody, "--clear-groups"}, argv...)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir, cmd.Env = repo, append(env, "PYTHON="+map[bool]string{true: python}[pyErr == nil])
			// ExtraFiles[i] is fd 3+i: six placeholders, then the leak.
			devnull, err := os.Open(os.DevNull)
			require.NoError(t, err)
			defer devnull.Close()
			cmd.ExtraFiles = []*os.File{devnull, devnull, devnull, devnull, devnull, devnull, lf}
			b, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", b)

			runDir, err := latestRunDir(repo)
			require.NoError(t, err)
			st := readRunState(t, repo)
			tries := agentTries(t, runDir, st)
			assert.Equal(t, "EACCES", tries["pts"], "the user's terminal")
			assert.Equal(t, "EACCES", tries["ptmx"], "a new pseudo-terminal")
			assert.NotEqual(t, "ok", tries["fd9"], "the inherited descriptor")
			assert.Equal(t, "EROFS", tries["gitconfig"])
			log, err := os.ReadFile(filepath.Join(runDir, st.Milestones[0].Attempts[0].Log))
			require.NoError(t, err)
			assert.Contains(t, string(log), "FDS 0 1 2 3 \n", "stdin, stdout, stderr and ls's own")
			assert.Contains(t, string(log), "CAPS 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 \n",
				"no capability, none in the bounding set")
			if pyErr == nil {
				assert.Contains(t, string(log), "SETATTR EPERM\n", "mount_setattr cannot clear read-only on .git")
			} else {
				t.Logf("python3 not found: mount_setattr not tried (%v)", pyErr)
			}
			data, err := os.ReadFile(leak)
			require.NoError(t, err)
			assert.Empty(t, string(data), "nothing written through fd 9")
			buf := make([]byte, 256)
			fd := int(ptmx.Fd())
			require.NoError(t, unix.SetNonblock(fd, true))
			got, _ := unix.Read(fd, buf) // EAGAIN: nothing was written
			assert.False(t, strings.Contains(string(buf[:max(got, 0)]), "owned"), "nothing reached the terminal")
		})
	}
}

// TestSandboxRefusesAStoreInTheWorkTree: with the sandbox on, a run store
// the agent could write (--home inside the checkout) is refused with
// config_invalid (78), naming the flag.
func TestSandboxRefusesAStoreInTheWorkTree(t *testing.T) {
	skipWithoutSandbox(t)
	repo, _, env := sandboxRepo(t)
	// Ignored, so that the store does not make the checkout dirty.
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("/store/\n"), 0o644))
	code, out := runSandboxed(t, repo, env, "--home", filepath.Join(repo, "store"), "--prompt", "go", "--sandbox=on", "--",
		"sh", "-c", "echo RUNR_STATUS: done")
	assert.Equal(t, 78, code, "%s", out)
	assert.Contains(t, out, "--home")
	assert.Contains(t, out, "inside the work tree")
}

// TestSandboxSubmoduleFilterNeverRuns: a confined agent cannot write the
// submodule's git dir under .git/modules, so it points the submodule's
// .git file at a copy of its own in the work tree, with a clean filter
// that its .gitattributes sets, and rewrites a file to the same size (a
// recursive git status compares it through the filter); runr's own git,
// unconfined, never runs it (it does not recurse into submodules), and
// the rewritten .git file is git metadata.
func TestSandboxSubmoduleFilterNeverRuns(t *testing.T) {
	skipWithoutSandbox(t)
	repo, _, env := sandboxRepo(t)
	lib := filepath.Join(filepath.Dir(repo), "libsrc")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lib, "lib.go"), []byte("package lib\n"), 0o644))
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "lib"}} {
		gitOut(t, lib, env, a...)
	}
	gitOut(t, repo, env, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib, "deps/lib")
	gitOut(t, repo, env, "commit", "-q", "-m", "submodule")
	marker := filepath.Join(filepath.Dir(repo), "filter-ran")
	code, out := runSandboxed(t, repo, env, "--allow", "src/**", "--prompt", "go", "--sandbox=on", "--", "sh", "-c",
		`cp -r .git/modules/deps/lib deps/evilgit && git config -f deps/evilgit/config core.worktree ../lib && `+
			`git config -f deps/evilgit/config filter.evil.clean "touch `+marker+`; cat" && `+
			`echo "gitdir: ../evilgit" > deps/lib/.git && echo "* filter=evil" > deps/lib/.gitattributes && `+
			`printf "package LIB\\n" > deps/lib/lib.go && echo "RUNR_STATUS: done"`)
	assert.Equal(t, 2, code, "%s", out)
	assert.Contains(t, out, "deps/lib/.git")
	assert.NoFileExists(t, marker, "the agent's filter ran outside the sandbox")
}
