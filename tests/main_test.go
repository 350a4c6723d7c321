// Package tests drives the built runr binary end to end: testscript
// scenarios under testdata/script and Go tests for signals and crashes,
// against the scriptable fake agent in tests/fakeagent.
package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/runr-dev/runr/tests/testenv"
)

// binDir holds the built runr and fakeagent binaries (testenv.BinDir).
var binDir string

func TestMain(m *testing.M) {
	dir, err := testenv.Build(testenv.Runr, testenv.FakeAgent)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	os.Exit(m.Run())
}

// repoRoot is the module's root directory (testenv.ModuleRoot).
func repoRoot() string {
	root, err := testenv.ModuleRoot()
	if err != nil {
		panic(err)
	}
	return root
}

// testEnv is the environment of every end-to-end process: the built
// binaries first on PATH, a private HOME and git identity, no colour
// decisions inherited from the machine.
func testEnv(work string) []string {
	home := filepath.Join(work, ".home")
	os.MkdirAll(home, 0o755)
	env := []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"LC_ALL=C",
	}
	// The demo builds Go code: keep the machine's Go caches, which the
	// private HOME would otherwise hide (a cold build cache costs minutes).
	env = append(env, goEnv...)
	return env
}

// goEnv holds the Go toolchain's cache and proxy settings of the machine.
var goEnv = func() []string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS").Output()
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	var env []string
	for i, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
		if i < len(lines) && lines[i] != "" {
			env = append(env, k+"="+lines[i])
		}
	}
	return env
}()

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(e *testscript.Env) error {
			for _, kv := range testEnv(e.WorkDir) {
				k, v, _ := strings.Cut(kv, "=")
				e.Setenv(k, v)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":    cmdExits,
			"initrepo": cmdInitRepo,
			"waitfile": cmdWaitFile,
			"jsonget":  cmdJSONGet,
			"checkrun": cmdCheckRun,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		RequireExplicitExec: true,
	})
}

// exits N PROG ARGS... runs PROG and asserts that it exits with status N;
// its stdout and stderr are kept for the stdout and stderr commands.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not an exit code", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		got = ee.ExitCode()
	default:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// initrepo [DIR] makes DIR (default: the current directory) a git
// repository with everything in it committed.
func cmdInitRepo(ts *testscript.TestScript, neg bool, args []string) {
	dir := "."
	if len(args) > 0 {
		dir = args[0]
	}
	dir = ts.MkAbs(dir)
	for _, a := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "--allow-empty", "-m", "initial"},
	} {
		cmd := exec.Command("git", a...)
		cmd.Dir = dir
		cmd.Env = testEnv(ts.Getenv("WORK"))
		if out, err := cmd.CombinedOutput(); err != nil {
			ts.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
}

// waitfile FILE PATTERN polls until FILE exists and contains PATTERN (a
// plain substring), for at most testenv.WaitLimit.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: waitfile file substring")
	}
	if !testenv.Poll(testenv.WaitLimit, testenv.FileContains(ts.MkAbs(args[0]), args[1])) {
		ts.Fatalf("waitfile: gave up after %s waiting for %s to contain %q", testenv.WaitLimit, args[0], args[1])
	}
}

// jsonget FILE EXPR... checks fields of a JSON file (@NAME is the file NAME
// in the newest run's directory, e.g. @state.json): each EXPR is
// path=value with a dotted path ("stop_reason.code=timeout"), or path? to
// require that the field exists.
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: jsonget file path=value...")
	}
	file := args[0]
	if name, ok := strings.CutPrefix(file, "@"); ok {
		// @state.json: that file of the newest run of this repository.
		dir, err := latestRunDir(ts.MkAbs("."))
		if err != nil {
			ts.Fatalf("jsonget: %v", err)
		}
		file = filepath.Join(dir, name)
	}
	data := ts.ReadFile(file)
	for _, expr := range args[1:] {
		path, want, hasWant := strings.Cut(expr, "=")
		path = strings.TrimSuffix(path, "?")
		got, ok := jsonPath([]byte(data), path)
		switch {
		case !ok && !neg:
			ts.Fatalf("%s: no field %s", args[0], path)
		case !ok:
		case hasWant && (got == want) == neg:
			ts.Fatalf("%s: %s is %s, want %s%s", args[0], path, got, map[bool]string{true: "not "}[neg], want)
		case !hasWant && neg:
			ts.Fatalf("%s: unexpected field %s", args[0], path)
		}
	}
}
