package bench

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	statusRuns   = 1000
	statusRounds = 5
	statusTarget = 200 * time.Millisecond
)

// store makes a repository whose run store holds statusRuns runs: src, a
// real run dir, and copies of it under other valid run ids (files that name
// the run are rewritten with the new id, the others hard-linked).
func (b *bench) store(t *testing.T, src string) (repo, home string) {
	t.Helper()
	repo, home = b.repo(t)
	runs := filepath.Join(repo, ".git", "runr", "runs")
	id := filepath.Base(src)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range statusRuns {
		nid := fmt.Sprintf("%s-%06x", base.Add(time.Duration(i)*time.Second).Format("20060102T150405Z"), i)
		if i == statusRuns-1 {
			nid = id
		}
		dst := filepath.Join(runs, nid)
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, path)
			to := filepath.Join(dst, rel)
			if d.IsDir() {
				return os.MkdirAll(to, 0o755)
			}
			fi, err := d.Info()
			if err != nil || !fi.Mode().IsRegular() {
				return err
			}
			if fi.Size() > 64<<10 && !strings.HasSuffix(path, ".json") {
				return os.Link(path, to)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(to, bytes.ReplaceAll(data, []byte(id), []byte(nid)), fi.Mode().Perm())
		})
		if err != nil {
			t.Fatalf("copy the run to %s: %v", dst, err)
		}
	}
	return repo, home
}

func (b *bench) status(t *testing.T) {
	// Two stores: of a short run (three milestones, nine ticks), and of a
	// 270-tick run, whose state.json is 42 KB today.
	smallRepo, smallHome := b.repo(t)
	task := filepath.Join(filepath.Dir(smallRepo), "task.md")
	writeFile(t, task, milestones(3), 0o644)
	argv := append([]string{b.runr, "run", "--task", task, "--verify", "true", "--quiet", "--"}, noopAgent...)
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
		// The copies on disk, and one pass untimed: the figures are of a
		// store in the page cache, as when status is run again and again.
		syscall.Sync()
		mustExit(t, run(t, repo, b.env(home), nil, b.runr, "status"), 0, "runr status")
		var table, js, cat []time.Duration
		for range statusRounds {
			// What reading each state.json in full once costs, for
			// scale: status needs less than that.
			p := run(t, store, b.env(home), nil, "sh", "-c", "cat */state.json > /dev/null")
			mustExit(t, p, 0, "cat")
			cat = append(cat, p.wall)
			p = run(t, repo, b.env(home), nil, b.runr, "status")
			mustExit(t, p, 0, "runr status")
			if !strings.Contains(p.out, filepath.Base(v.src)) {
				t.Fatalf("runr status does not list %s:\n%s", filepath.Base(v.src), p.out)
			}
			table = append(table, p.wall)
			p = run(t, repo, b.env(home), nil, b.runr, "status", "--json")
			mustExit(t, p, 0, "runr status --json")
			js = append(js, p.wall)
		}
		for _, f := range []struct {
			flag string
			ds   []time.Duration
		}{{"", table}, {" --json", js}} {
			m := median(f.ds)
			report(t, row{
				Figure:   fmt.Sprintf("`runr status%s` over 1,000 %s (state.json %s each)", f.flag, v.name, kb(size)),
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
