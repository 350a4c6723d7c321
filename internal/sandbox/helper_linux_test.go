package sandbox

import (
	"encoding/json"
	"net"
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

// TestHelperDropsTheTerminal: started from a terminal (runr's, the
// user's shell's), the confined program loses it as its controlling
// terminal, so that it cannot push input into the user's shell with
// TIOCSTI (which needs the terminal to be the caller's controlling one).
func TestHelperDropsTheTerminal(t *testing.T) {
	needLandlock(t)
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer ptmx.Close()
	require.NoError(t, unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	defer pts.Close()
	root := tree(t, "go.mod")
	p, err := Build(Decision{Confine: true}, Layout{WorkTree: root})
	require.NoError(t, err)
	p.ABI = ABI()
	policy, err := json.Marshal(p)
	require.NoError(t, err)
	probe := `if (: </dev/tty) 2>/dev/null; then echo tty; else echo notty; fi`
	// A session on the terminal, whose child (runr) starts the helper.
	cmd := exec.Command("sh", "-c", probe+`; "$0" `+HelperArg+` "$1" -- /bin/sh -c '`+probe+`'`, mustExe(t), string(policy))
	cmd.Dir, cmd.Stdin = root, pts
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Run(), out.String())
	assert.Equal(t, "tty\nnotty\n", out.String(), "the session has the terminal, the confined program not")
}

// TestHelperKeepsOutOfOtherProcesses: the confined agent cannot write
// the memory of an unconfined process of its own user (runr's,
// the user's shell's: Landlock refuses the ptrace access), nor, on ABI 6
// and later, connect to an abstract unix socket one of them listens on
// (a session bus, a terminal multiplexer, whose server would act for it
// outside the sandbox).
func TestHelperKeepsOutOfOtherProcesses(t *testing.T) {
	needLandlock(t)
	name := "@runr-sandbox-test-" + strconv.Itoa(os.Getpid())
	l, err := net.Listen("unix", name)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	other := exec.Command("sleep", "600")
	require.NoError(t, other.Start())
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	pid := strconv.Itoa(other.Process.Pid)
	// A byte of its memory that no one uses: the far end of its stack.
	maps, err := os.ReadFile("/proc/" + pid + "/maps")
	require.NoError(t, err)
	var stack uint64
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(line, "[stack]") {
			stack, err = strconv.ParseUint(line[:strings.IndexByte(line, '-')], 16, 64)
			require.NoError(t, err)
		}
	}
	require.NotZero(t, stack)
	poke := `w mem 'printf x | dd of=/proc/` + pid + `/mem bs=1 seek=` + strconv.FormatUint(stack+16, 10) + ` conv=notrunc 2>/dev/null'; `
	root := tree(t, "go.mod")
	p, err := Build(Decision{Confine: true}, Layout{WorkTree: root})
	require.NoError(t, err)
	p.ABI = ABI()
	exe := mustExe(t)
	connect := `w abstract '"` + exe + `" ` + connectArg + ` ` + name + `'`
	// Unconfined, the same commands work.
	assert.Equal(t, "mem ok\nabstract ok\n", confined(t, root, Policy{}, false, probeWrites+poke+connect))
	out := confined(t, root, p, false, probeWrites+poke+connect)
	want := "mem denied\n"
	want += map[bool]string{true: "abstract denied\n", false: "abstract ok\n"}[ABI() >= 6]
	assert.Equal(t, want, out)
}

// TestHelperRefusesToBindInsideAContainer: runr in a user and mount
// namespace already (a rootless container) that starts the helper without
// a namespace of its own: the helper must not take the container's mounts
// for its own and bind there.
func TestHelperRefusesToBindInsideAContainer(t *testing.T) {
	root := tree(t, ".git/config")
	// The policy as runr in the container makes it (Wrap names the
	// container's mount namespace as the caller's).
	policy := `{"probe":true,"read_only":["` + filepath.Join(root, ".git") + `"],"caller_mount_ns":"'"$(readlink /proc/self/ns/mnt)"'"}`
	cmd := exec.Command("sh", "-c", `"$0" `+HelperArg+` '`+policy+`'; echo "exit $?"; grep -c " `+root+`/.git " /proc/self/mountinfo`, mustExe(t))
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}}
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(err.Error(), "operation not permitted") {
		t.Skipf("this machine refuses user namespaces: %v", err)
	}
	assert.Contains(t, string(out), ErrorPrefix+"the helper is not in a user and mount namespace of its own")
	assert.Contains(t, string(out), "exit 119\n0\n", "nothing bound in the container's mounts")
}
