package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
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
