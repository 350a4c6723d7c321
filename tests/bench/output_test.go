package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	outputBytes  = 1 << 30 // 1 GiB
	outputRounds = 7
	outputMaxRSS = 64 << 20
	// defaultLogCap is agent.log_cap's default: the log keeps its first
	// and last 32 MiB and a line counting the bytes left out, and stays
	// under outputMaxLog.
	defaultLogCap = 64 << 20
	outputMaxLog  = 65 << 20
)

// checkCappedLog fails unless the call's log of n bytes of output is under
// outputMaxLog and says, where its head ends, how many bytes it left out.
func checkCappedLog(t *testing.T, logs []string, n int64) int64 {
	t.Helper()
	if len(logs) != 1 {
		t.Fatalf("%d implement logs, not 1: %v", len(logs), logs)
	}
	fi, err := os.Stat(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if n <= defaultLogCap {
		if fi.Size() < n {
			t.Fatalf("the call's log holds %d bytes, not %d", fi.Size(), n)
		}
		return fi.Size()
	}
	if fi.Size() >= outputMaxLog {
		t.Fatalf("the call's log of %d bytes of output is %d bytes, not under %d", n, fi.Size(), outputMaxLog)
	}
	f, err := os.Open(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	note := make([]byte, 512)
	if _, err := f.ReadAt(note, defaultLogCap/2); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("\n[runr: %d bytes of output left out here;", n-defaultLogCap)
	if !strings.HasPrefix(string(note), want) {
		t.Fatalf("the log does not say %q after its head: %q", want, note[:min(len(note), 160)])
	}
	return fi.Size()
}

// producer prints n bytes of 80-byte lines as fast as the machine can: the
// same program feeds runr and the baseline, so its cost is on both sides.
func producer(n int64) string {
	return fmt.Sprintf("yes %s | head -c %d", strings.Repeat("x", 79), n)
}

// touchMemory touches n bytes of memory and lets go of them, so that the
// page cache of the run that follows is made of memory the machine's host
// backs now. A virtual machine that hands its free memory back to its host
// (free page reporting, as this machine's Firecracker does) makes each
// first touch of such memory a fault on the host: a gigabyte written into
// it took three times as long as one written into memory just freed, at
// random, for either side.
func touchMemory(n int) {
	func() {
		b := make([]byte, n)
		for i := 0; i < n; i += 4096 {
			b[i] = 1
		}
	}()
	debug.FreeOSMemory() // collects b and hands its pages back to the kernel
}

func (b *bench) output(t *testing.T) {
	var logSize int64 // the largest call's log, under agent.log_cap's default
	// runr: the agent prints the bytes, runr streams them to the call's log
	// (and its tail and line scan). The same run with no output is the
	// fixed cost of a run (start, verify, checkpoint, finalize), taken off.
	agent := func(n int64) proc {
		repo, home := b.repo(t)
		syscall.Sync() // the last run's dirty pages are not this one's to write
		touchMemory(outputBytes * 3 / 2)
		p := b.runRSS(t, repo, b.env(home), nil, b.runr, "run", "--prompt", "print", "--verify", "true", "--quiet", "--", "sh", "-c", producer(n))
		mustExit(t, p, 0, "runr (output)")
		dir := runDir(t, repo)
		logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*implement*"))
		logSize = max(logSize, checkCappedLog(t, logs, n))
		if err := os.RemoveAll(filepath.Dir(repo)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The baseline: the same producer into `cat > file` on the same disk.
	cat := func() proc {
		d := b.tempDir(t, "cat")
		file := filepath.Join(d, "out")
		syscall.Sync()
		touchMemory(outputBytes * 3 / 2)
		p := run(t, d, b.env(d), nil, "sh", "-c", "sh -c "+shellQuote(producer(outputBytes))+" | cat > "+shellQuote(file))
		mustExit(t, p, 0, "the cat baseline")
		if fi, err := os.Stat(file); err != nil || fi.Size() != outputBytes {
			t.Fatalf("cat wrote %v (%v), not %d bytes", fi, err, outputBytes)
		}
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
		return p
	}

	var runrs, empties, cats []time.Duration
	var rss int64
	for range outputRounds {
		cats = append(cats, cat().wall)
		p := agent(outputBytes)
		runrs = append(runrs, p.wall)
		rss = max(rss, p.maxRSS)
		e := agent(0)
		empties = append(empties, e.wall)
		rss = max(rss, e.maxRSS)
	}
	streaming := median(runrs) - median(empties)
	base := median(cats)
	gibs := func(d time.Duration) string {
		return fmt.Sprintf("%.2f GiB/s", float64(outputBytes)/(1<<30)/d.Seconds())
	}
	ratio := base.Seconds() / streaming.Seconds()
	report(t, row{
		Figure: "1 GiB of agent output in 80-byte lines to the call's log (agent.log_cap 64 MiB: head, tail, the bytes left out counted), vs `cat > file`; the log's size; runr's max RSS",
		Runr: fmt.Sprintf("%s (run %s less a run with no output %s), log %s, max RSS %s",
			gibs(streaming), spread(runrs), ms(median(empties)), mib(logSize), mib(rss)),
		Baseline: fmt.Sprintf("%s (%s)", gibs(base), spread(cats)),
		Ratio:    fmt.Sprintf("%.2fx throughput", ratio),
		Target:   "≥ 0.80x, log < 65 MiB, RSS ≤ 64 MiB",
		Met:      ratio >= 0.80 && rss <= outputMaxRSS && logSize < outputMaxLog,
	})
}
