package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

const (
	bigTaskBytes = 10 * 1000 * 1000
	bigTaskRatio = 1.10

	reasonsRounds = 20
	reasonsTime   = 15 * time.Millisecond
	// 26 MiB: the OpenTelemetry SDK and its OTLP exporters (gRPC among
	// them) are linked in and their pages touched at start, telemetry on
	// or off (docs/performance.md, reasons).
	reasonsRSS = 26 << 20
)

// bigTask compares the state.json of a run whose task is 10 MB with that of
// the same milestone alone.
func (b *bench) bigTask(t *testing.T) {
	size := func(task []byte) int64 {
		repo, home := b.repo(t)
		file := filepath.Join(filepath.Dir(repo), "task.md")
		writeFile(t, file, task, 0o644)
		argv := append([]string{b.runr, "run", "--task", file, "--verify", "true", "--quiet", "--"}, noopAgent...)
		mustExit(t, run(t, repo, b.env(home, tickEnv...), nil, argv...), 0, "runr")
		_, n := readState(t, runDir(t, repo))
		return n
	}
	tiny := milestones(1)
	var big bytes.Buffer
	big.Write(tiny)
	big.WriteString("\n# Background\n\n")
	line := "The background of the task, at length: what the code does, why, and what must not change.\n"
	for big.Len() < bigTaskBytes {
		big.WriteString(line)
	}
	big.Truncate(bigTaskBytes)
	big.Truncate(bytes.LastIndexByte(big.Bytes(), '\n') + 1)

	sTiny, sBig := size(tiny), size(big.Bytes())
	ratio := float64(sBig) / float64(sTiny)
	report(t, row{
		Figure:   "state.json of a run with a 10 MB task (one milestone), vs the same milestone alone",
		Runr:     kb(sBig),
		Baseline: kb(sTiny),
		Ratio:    fmt.Sprintf("%.2fx", ratio),
		Target:   fmt.Sprintf("≤ %.2fx", bigTaskRatio),
		Met:      ratio <= bigTaskRatio,
	})
}

// reasons times `runr reasons`, a command that reads nothing: runr's start.
func (b *bench) reasons(t *testing.T) {
	d := b.tempDir(t, "reasons")
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	var runrs, trues []time.Duration
	var rss, trueRSS int64
	for range reasonsRounds {
		trues = append(trues, run(t, d, b.env(d), nil, truePath).wall)
		p := run(t, d, b.env(d), nil, b.runr, "reasons")
		mustExit(t, p, 0, "runr reasons")
		runrs = append(runrs, p.wall)
	}
	// The peaks, through testdata/maxrss, whose own size is the floor
	// `true` shows.
	for range 3 {
		trueRSS = max(trueRSS, b.runRSS(t, d, b.env(d), nil, truePath).maxRSS)
		p := b.runRSS(t, d, b.env(d), nil, b.runr, "reasons")
		mustExit(t, p, 0, "runr reasons")
		rss = max(rss, p.maxRSS)
	}
	m := median(runrs)
	report(t, row{
		Figure:   "`runr reasons`: start time and max RSS",
		Runr:     fmt.Sprintf("%s, %s", spread(runrs), mib(rss)),
		Baseline: fmt.Sprintf("`true`: %s, %s", spread(trues), mib(trueRSS)),
		Ratio:    fmt.Sprintf("%.1fx", float64(m)/float64(median(trues))),
		Target:   "≤ 15 ms, ≤ 26 MiB",
		Met:      m <= reasonsTime && rss <= reasonsRSS,
	})
}
