// Package bench measures runr against baselines run in the same invocation:
// the figures of docs/performance.md. `make bench` runs it (RUNR_BENCH=1);
// `go test ./...` skips it, so that no timing ever decides `make test`.
//
// Each row times real processes on this machine: the built runr, git, the
// real Claude Code CLI against the scripted Messages API of tests/testenv.
// Timings are medians of several runs, the baseline and runr interleaved so
// that a busy moment of a shared machine falls on both; nothing is random.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runr-dev/runr/tests/testenv"
)

// Env is the environment variable that turns the benchmarks on.
const Env = "RUNR_BENCH"

// row is one line of the printed table: a figure of the table, what
// runr measured, its baseline, and the target.
type row struct {
	Figure   string
	Runr     string
	Baseline string
	Ratio    string
	Target   string
	Met      bool
}

var (
	rowsMu sync.Mutex
	rows   []row
)

// report records r and fails t when its target is missed.
func report(t *testing.T, r row) {
	t.Helper()
	rowsMu.Lock()
	rows = append(rows, r)
	rowsMu.Unlock()
	status := "met"
	if !r.Met {
		status = "MISSED"
		t.Errorf("%s: %s (baseline %s), ratio %s, target %s", r.Figure, r.Runr, r.Baseline, r.Ratio, r.Target)
	}
	fmt.Printf("  %s: runr %s · baseline %s · ratio %s · target %s · %s\n", r.Figure, r.Runr, r.Baseline, r.Ratio, r.Target, status)
}

func TestBench(t *testing.T) {
	if os.Getenv(Env) != "1" {
		t.Skipf("timing benchmarks: `make bench` runs them (%s=1)", Env)
	}
	b := setup(t)
	fmt.Printf("runr benchmarks on %s/%s, %d CPUs, go %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	t.Run("ticks", b.ticks)
	t.Run("output", b.output)
	t.Run("status", b.status)
	t.Run("report", b.report)
	t.Run("claude", b.claude)
	t.Run("bigtask", b.bigTask)
	t.Run("reasons", b.reasons)
	t.Run("parallel", b.parallel)
	t.Run("profiles", b.profiles)

	missed := 0
	var out strings.Builder
	out.WriteString("\n| figure | runr | baseline | ratio | target | |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		mark := "met"
		if !r.Met {
			mark = "**missed**"
			missed++
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s | %s |\n", r.Figure, r.Runr, r.Baseline, r.Ratio, r.Target, mark)
	}
	fmt.Print(out.String())
	fmt.Printf("\n%d of %d targets met\n", len(rows)-missed, len(rows))
}

// bench holds what every row uses: the built runr and a directory to work in.
type bench struct {
	runr   string // the built binary
	maxrss string // testdata/maxrss built: runs a program and writes its peak RSS
	stamp  string // testdata/stamp built: stands in for a program and times its runs
	git    string // the real git
	dir    string // scratch space, removed at the end
}

func setup(t *testing.T) *bench {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spreadDirs(t, dir)
	b := &bench{runr: filepath.Join(dir, "bin", "runr"), maxrss: filepath.Join(dir, "bin", "maxrss"), stamp: filepath.Join(dir, "bin", "stamp"), dir: dir}
	for _, p := range [][2]string{{b.runr, "./cmd/runr"}, {b.maxrss, "./tests/bench/testdata/maxrss"}, {b.stamp, "./tests/bench/testdata/stamp"}} {
		build := exec.Command("go", "build", "-o", p[0], p[1])
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", p[1], err, out)
		}
	}
	if b.git, err = exec.LookPath("git"); err != nil {
		t.Fatal(err)
	}
	return b
}

// env is the environment of every process a row starts: the machine's,
// without its runr and git settings, with a private HOME, and extra added.
func (b *bench) env(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RUNR_") || strings.HasPrefix(k, "GIT_") || k == "HOME" || k == "LC_ALL" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+home,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.com",
	)
	return append(env, extra...)
}

// tempDir is a new directory under the bench's scratch space.
func (b *bench) tempDir(t *testing.T, name string) string {
	t.Helper()
	d, err := os.MkdirTemp(b.dir, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// repo makes a git repository with one empty commit and a HOME beside it.
func (b *bench) repo(t *testing.T) (repo, home string) {
	t.Helper()
	d := b.tempDir(t, "repo")
	repo, home = filepath.Join(d, "work"), filepath.Join(d, "home")
	for _, p := range []string{repo, home} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command(b.git, args...)
		cmd.Dir, cmd.Env = repo, b.env(home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo, home
}

// proc is how one timed process went.
type proc struct {
	wall   time.Duration
	exit   int
	out    string // stdout and stderr, the last 4 KiB
	maxRSS int64  // bytes, runRSS only: the peak of the process or of a child it waited for
}

// run starts argv in dir with env, waits for it, and times it from start
// to exit. Its output goes through a pipe (as to a terminal or a pager)
// and only the last 4 KiB are kept.
func run(t *testing.T, dir string, env []string, stdin []byte, argv ...string) proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	tail := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = tail, tail
	start := time.Now()
	err := cmd.Run()
	p := proc{wall: time.Since(start), out: string(tail.b)}
	if cmd.ProcessState == nil {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	p.exit = cmd.ProcessState.ExitCode()
	return p
}

// runRSS is run through testdata/maxrss, which starts argv from a small
// process and reports its peak RSS (wait4's rusage): started from the test
// binary itself, a process would count the test binary's size as its own.
func (b *bench) runRSS(t *testing.T, dir string, env []string, stdin []byte, argv ...string) proc {
	t.Helper()
	f, err := os.CreateTemp(b.dir, "rss-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer os.Remove(f.Name())
	p := run(t, dir, env, stdin, append([]string{b.maxrss, f.Name()}, argv...)...)
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if p.maxRSS, err = strconv.ParseInt(string(data), 10, 64); err != nil {
		t.Fatalf("maxrss %s: %v\n%s", strings.Join(argv, " "), err, p.out)
	}
	return p
}

// mustExit fails t unless p exited with code.
func mustExit(t *testing.T, p proc, code int, what string) {
	t.Helper()
	if p.exit != code {
		t.Fatalf("%s exited %d, not %d:\n%s", what, p.exit, code, p.out)
	}
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > 4096 {
		w.b = slices.Clone(w.b[len(w.b)-4096:])
	}
	return len(p), nil
}

// median of ds; ds is sorted in place.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

// spread is "median (min–max, n runs)".
func spread(ds []time.Duration) string {
	m := median(ds)
	return fmt.Sprintf("%s (%s–%s, %d runs)", ms(m), ms(ds[0]), ms(ds[len(ds)-1]), len(ds))
}

func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func kb(n int64) string {
	if n >= 1000*1000 {
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1e3)
}

// writeFile writes data at path, failing t on error.
func writeFile(t *testing.T, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}

// milestones is a task of n checklist items.
func milestones(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] step %d\n", i)
	}
	return b.Bytes()
}

// runDir is the directory of the only run in repo's store.
func runDir(t *testing.T, repo string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(repo, ".git", "runr", "runs", "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("want one run in %s, have %v (%v)", repo, dirs, err)
	}
	return dirs[0]
}
