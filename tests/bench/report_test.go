package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// usageAgent reads its prompt and reports a call's usage as a command
// agent does, so that the runs have per-model totals to sum up.
var usageAgent = []string{"sh", "-c", "cat >/dev/null; echo 'RUNR_USAGE: input_tokens=1000 output_tokens=100 cost_usd=0.01 model=bench-model'"}

// report times `runr report` over the stores status is timed over: it
// reads the same summaries, and sums them up.
func (b *bench) report(t *testing.T) {
	smallRepo, smallHome := b.repo(t)
	task := filepath.Join(filepath.Dir(smallRepo), "task.md")
	writeFile(t, task, milestones(3), 0o644)
	argv := append([]string{b.runr, "run", "--task", task, "--verify", "true", "--quiet", "--"}, usageAgent...)
	mustExit(t, run(t, smallRepo, b.env(smallHome, tickEnv...), nil, argv...), 0, "runr (3 milestones)")
	small := runDir(t, smallRepo)
	_, large := b.tickRun(t, 270)

	for _, v := range []struct {
		name string
		src  string
	}{{"short runs", small}, {"270-tick runs", large}} {
		_, size := readState(t, v.src)
		repo, home := b.store(t, v.src)
		store := filepath.Join(repo, ".git", "runr", "runs")
		syscall.Sync()
		mustExit(t, run(t, repo, b.env(home), nil, b.runr, "report"), 0, "runr report")
		var table, byModel, cat []time.Duration
		for range statusRounds {
			p := run(t, store, b.env(home), nil, "sh", "-c", "cat */state.json > /dev/null")
			mustExit(t, p, 0, "cat")
			cat = append(cat, p.wall)
			p = run(t, repo, b.env(home), nil, b.runr, "report")
			mustExit(t, p, 0, "runr report")
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^all +%d `, statusRuns)).MatchString(p.out) {
				t.Fatalf("runr report does not count %d runs:\n%s", statusRuns, p.out)
			}
			table = append(table, p.wall)
			p = run(t, repo, b.env(home), nil, b.runr, "report", "--by", "model", "--format", "json")
			mustExit(t, p, 0, "runr report --by model --format json")
			byModel = append(byModel, p.wall)
		}
		for _, f := range []struct {
			flag string
			ds   []time.Duration
		}{{"", table}, {" --by model --format json", byModel}} {
			m := median(f.ds)
			report(t, row{
				Figure:   fmt.Sprintf("`runr report%s` over 1,000 %s (state.json %s each)", f.flag, v.name, kb(size)),
				Runr:     spread(f.ds),
				Baseline: fmt.Sprintf("`cat` of every state.json: %s", spread(cat)),
				Ratio:    fmt.Sprintf("%.2fx", float64(m)/float64(median(cat))),
				Target:   "≤ 0.2 s",
				Met:      m <= statusTarget,
			})
		}
		if err := os.RemoveAll(filepath.Dir(repo)); err != nil {
			t.Fatal(err)
		}
	}
}
