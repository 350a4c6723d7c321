package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/proc"
)

const connectArg = "__connect"

// The test binary is the helper when run with HelperArg, as runr is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	// A client of a unix socket, for the tests of what the confined agent
	// may connect to.
	if len(os.Args) > 2 && os.Args[1] == connectArg {
		c, err := net.Dial("unix", os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func needLandlock(t *testing.T) {
	t.Helper()
	if ABI() == 0 {
		t.Skipf("this kernel (%s) has no Landlock", Kernel())
	}
}

// confined runs script under policy p (with a namespace when ns) through
// worker, as an agent call is run, and returns its output.
func confined(t *testing.T, dir string, p Policy, ns bool, script string) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	wrap, err := Wrap(exe, p)
	require.NoError(t, err)
	var out strings.Builder
	res, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", script}, Dir: dir, Wrap: wrap, Namespaces: ns,
		Stdout: &out, OnStart: func(proc.Proc) error { return nil }})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "output: %s%s", out.String(), res.Tail)
	return out.String()
}

const probeWrites = `w() { if ( eval "$2" ) 2>/dev/null; then echo "$1 ok"; else echo "$1 denied"; fi; }; `

func TestHelperInANamespace(t *testing.T) {
	needLandlock(t)
	root := tree(t, ".git/config", "go.mod", "src/a.go")
	outside := t.TempDir()
	p, err := Build(Decision{Confine: true, Namespace: true}, Layout{WorkTree: root})
	require.NoError(t, err)
	p.ABI = ABI()
	require.NoError(t, ProbeNamespaces(context.Background(), mustExe(t), root, p.ReadOnly))
	out := confined(t, root, p, true, probeWrites+`w git 'echo x >> .git/config'; w src 'echo y >> src/a.go'; `+
		`w rename 'echo m > go.mod.new && mv go.mod.new go.mod'; w new 'echo n > NEW'; w outside 'echo o > `+outside+`/o'; `+
		`w umount 'umount .git'`)
	assert.Equal(t, "git denied\nsrc ok\nrename ok\nnew ok\noutside denied\numount denied\n", out)
	assert.NoFileExists(t, filepath.Join(outside, "o"))
	b, err := os.ReadFile(filepath.Join(root, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
}

// TestHelperTopLevelOnly is the auto fallback in a checkout without
// namespaces: Landlock alone, the existing top-level entries writable, not
// the root.
func TestHelperTopLevelOnly(t *testing.T) {
	needLandlock(t)
	root := tree(t, ".git/config", "go.mod", "src/a.go")
	p, err := Build(Decision{Confine: true, TopLevel: true}, Layout{WorkTree: root})
	require.NoError(t, err)
	p.ABI = ABI()
	out := confined(t, root, p, false, probeWrites+`w git 'echo x >> .git/config'; w src 'echo y >> src/a.go'; w srcnew 'echo y > src/b.go'; `+
		`w gomod 'echo m >> go.mod'; w rename 'echo m > src/go.mod.new && mv src/go.mod.new go.mod'; w new 'echo n > NEW'`)
	assert.Equal(t, "git denied\nsrc ok\nsrcnew ok\ngomod ok\nrename denied\nnew denied\n", out)
}

func TestHelperRefusesToBindOutsideANamespace(t *testing.T) {
	root := tree(t, ".git/config")
	var out, errOut strings.Builder
	code := Main([]string{`{"probe":true,"read_only":["` + filepath.Join(root, ".git") + `"]}`}, &out, &errOut)
	assert.Equal(t, ExitSetupFailed, code)
	assert.Contains(t, errOut.String(), ErrorPrefix+"the helper is not in a user and mount namespace of its own")
	assert.Empty(t, out.String())
}

func TestHelperArguments(t *testing.T) {
	var errOut strings.Builder
	assert.Equal(t, ExitSetupFailed, Main([]string{`{"abi":0}`, "sh"}, &strings.Builder{}, &errOut))
	assert.Contains(t, errOut.String(), "no program given after --")
	errOut.Reset()
	assert.Equal(t, ExitSetupFailed, Main([]string{`{`}, &strings.Builder{}, &errOut))
	assert.Contains(t, errOut.String(), "not valid JSON")
}

func mustExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe
}

// TestHelperGrantsNoLinkPlantedInAWritableDir: a writable path beneath
// another writable directory (an agent's state dir inside a cache the user
// made writable, a relative sandbox.writable entry inside the work tree)
// can be replaced by the agent with a symbolic link to anywhere; neither a
// later call of the run nor a resumed run (a new plan) may then grant
// where it points.
func TestHelperGrantsNoLinkPlantedInAWritableDir(t *testing.T) {
	needLandlock(t)
	root := tree(t, "go.mod", "build/x")
	home := t.TempDir()
	cache := tree(t, "tool/")
	sub := filepath.Join(cache, "tool")
	layout := Layout{WorkTree: root, Extra: []string{cache, sub, filepath.Join(root, "build")}}
	p, err := Build(Decision{Confine: true}, layout)
	require.NoError(t, err)
	p.ABI = ABI()
	plant := `rm -r ` + sub + ` build && ln -s ` + home + ` ` + sub + ` && ln -s ` + home + ` build`
	// The first call plants the links; the second would write through them.
	assert.Equal(t, "plant ok\n", confined(t, root, p, false, probeWrites+`w plant '`+plant+`'`))
	out := confined(t, root, p, false, probeWrites+`w home 'echo x > `+home+`/bashrc'`)
	assert.Equal(t, "home denied\n", out, "a later call")
	// A resumed run plans again, with the links in place.
	p, err = Build(Decision{Confine: true}, layout)
	require.NoError(t, err)
	p.ABI = ABI()
	assert.NotContains(t, p.Writable, home)
	out = confined(t, root, p, false, probeWrites+`w home 'echo x > `+home+`/bashrc'`)
	assert.Equal(t, "home denied\n", out, "a resumed run")
	assert.NoFileExists(t, filepath.Join(home, "bashrc"))
}

// TestHelperFollowsNoLinkAtCallTime: the helper grants the paths the plan
// resolved, and refuses one that has become a symbolic link since, rather
// than grant where it points.
func TestHelperFollowsNoLinkAtCallTime(t *testing.T) {
	needLandlock(t)
	root := tree(t, "go.mod")
	home := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.Symlink(home, state))
	p := Policy{ABI: ABI(), Writable: []string{root, state}}
	exe, err := os.Executable()
	require.NoError(t, err)
	wrap, err := Wrap(exe, p)
	require.NoError(t, err)
	var out strings.Builder
	res, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"sh", "-c", "echo x > " + home + "/bashrc; echo ran"}, Dir: root, Wrap: wrap,
		Stdout: &out, OnStart: func(proc.Proc) error { return nil }})
	require.NoError(t, err)
	assert.Equal(t, ExitSetupFailed, res.ExitCode)
	assert.Contains(t, string(res.Tail), ErrorPrefix+"landlock: "+state+": a symbolic link is on its way")
	assert.Empty(t, out.String())
	assert.NoFileExists(t, filepath.Join(home, "bashrc"))
}

// TestHelperMakesNoDevice: a root agent (without a namespace, whose root
// could not) may not make a device file in the work tree, to reach a disk
// or memory through it.
func TestHelperMakesNoDevice(t *testing.T) {
	needLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("only root can make device files")
	}
	root := tree(t, "go.mod")
	p, err := Build(Decision{Confine: true}, Layout{WorkTree: root})
	require.NoError(t, err)
	p.ABI = ABI()
	out := confined(t, root, p, false, probeWrites+`w char 'mknod c c 1 3'; w block 'mknod b b 7 0'; w fifo 'mkfifo f'`)
	assert.Equal(t, "char denied\nblock denied\nfifo ok\n", out)
}
