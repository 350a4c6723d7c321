// Package testenv is the tests' shared machinery: the project's programs
// built once per test binary, waiting on a condition with a deadline,
// random generators whose seed is logged and can be fixed to replay a
// failure, and a scripted Anthropic Messages API for the real Claude Code
// CLI. Only tests and the benchmarks of tests/bench import it.
package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Program is a main package of this module that tests run as a real process.
type Program struct {
	Pkg  string // relative to the module root, as `go build` takes it
	Name string // file name of the built binary
}

var (
	Runr      = Program{Pkg: "./cmd/runr", Name: "runr"}
	FakeAgent = Program{Pkg: "./tests/fakeagent", Name: "fakeagent"}
	DemoAgent = Program{Pkg: "./examples/demo/agent", Name: "runr-demo-agent"}
)

var (
	mu    sync.Mutex
	built = map[Program]error{}
)

// Build builds progs into BinDir, each at most once per test binary, and
// returns BinDir: a directory to put first on PATH. The directory outlives
// the test binary and is shared by every test binary of this checkout, so
// that `go test ./...` builds each program once; `go build` itself sees
// whether a binary there is up to date, and a file lock keeps two test
// binaries from writing the same file at once.
func Build(progs ...Program) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range progs {
		err, ok := built[p]
		if !ok {
			err = build(dir, p)
			built[p] = err
		}
		if err != nil {
			return "", err
		}
	}
	return dir, nil
}

// Bin returns the path of p built, failing t if it does not build.
func Bin(t testing.TB, p Program) string {
	t.Helper()
	dir, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, p.Name)
}

func build(dir string, p Program) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "."+p.Name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, p.Name), p.Pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", p.Pkg, err, out)
	}
	return nil
}

var binDir = sync.OnceValues(func() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	// One directory per checkout and GOFLAGS, so that two checkouts (or a
	// -race run next to a plain one) never rebuild each other's binaries.
	sum := sha256.Sum256([]byte(root + "\x00" + os.Getenv("GOFLAGS")))
	dir := filepath.Join(os.TempDir(), "runr-testbin-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
})

// BinDir is the directory Build builds into.
func BinDir() (string, error) { return binDir() }

var moduleRoot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("the tests run outside the module")
	}
	return filepath.Dir(gomod), nil
})

// ModuleRoot is the directory of the module's go.mod.
func ModuleRoot() (string, error) { return moduleRoot() }
