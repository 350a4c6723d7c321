package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdCheckRun [CODE] checks the newest run of the repository in the
// current directory as every stop must leave it: state.json parses, its
// stop_reason is complete (with CODE when given), report.md and stop.json
// exist, and no process of any group the run started is still alive.
func cmdCheckRun(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: checkrun [code]")
	}
	runDir, err := latestRunDir(ts.MkAbs("."))
	if err != nil {
		ts.Fatalf("checkrun: %v", err)
	}
	if err := checkStoppedRun(runDir, args); err != nil {
		ts.Fatalf("checkrun %s: %v", filepath.Base(runDir), err)
	}
}

func latestRunDir(repo string) (string, error) {
	runs := filepath.Join(repo, ".git", "runr", "runs")
	entries, err := os.ReadDir(runs)
	if err != nil {
		return "", err
	}
	// The newest run is the one created last: ids of runs created within
	// one second do not sort by creation.
	best, bestAt := "", ""
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // a run being created, or a temporary file: not a run
		}
		b, _ := os.ReadFile(filepath.Join(runs, e.Name(), "state.json"))
		var st struct {
			CreatedAt string `json:"created_at"`
		}
		json.Unmarshal(b, &st)
		at := st.CreatedAt
		if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
			at = t.UTC().Format("2006-01-02T15:04:05.000000000")
		}
		if best == "" || at > bestAt || at == bestAt && e.Name() > best {
			best, bestAt = e.Name(), at
		}
	}
	if best == "" {
		return "", fmt.Errorf("no runs in %s", runs)
	}
	return filepath.Join(runs, best), nil
}

func checkStoppedRun(runDir string, want []string) error {
	b, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	if err != nil {
		return err
	}
	var st struct {
		RunStatus  string         `json:"run_status"`
		StopReason map[string]any `json:"stop_reason"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("state.json does not parse: %v", err)
	}
	if st.StopReason == nil {
		return fmt.Errorf("state.json has no stop_reason")
	}
	for _, k := range []string{"code", "exit_code", "family", "category", "terminal_status", "message"} {
		if _, ok := st.StopReason[k]; !ok {
			return fmt.Errorf("stop_reason lacks %s: %v", k, st.StopReason)
		}
	}
	if len(want) > 0 && st.StopReason["code"] != want[0] {
		return fmt.Errorf("stop_reason.code is %v, want %s", st.StopReason["code"], want[0])
	}
	for _, f := range []string{"report.md", "stop.json"} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
			return fmt.Errorf("%s missing after the stop", f)
		}
	}
	// A parallel run's workers record their processes in their own runs,
	// under the run's directory.
	timelines, _ := filepath.Glob(filepath.Join(runDir, "workers", "w*", "runs", "*", "timeline.jsonl"))
	var groups []int
	for _, tl := range append(timelines, filepath.Join(runDir, "timeline.jsonl")) {
		groups = append(groups, startedGroups(tl)...)
	}
	for _, pgid := range groups {
		if pids := groupMembers(pgid); len(pids) > 0 {
			return fmt.Errorf("process group %d still has processes %v", pgid, pids)
		}
	}
	return nil
}

// startedGroups lists the process groups the timeline says the run started.
func startedGroups(path string) []int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "process_started" {
			if pg, ok := ev.Data["pgid"].(float64); ok {
				out = append(out, int(pg))
			}
		}
	}
	return out
}

// groupMembers lists the live (not zombie) processes of a process group,
// read from /proc.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses and may
		// hold spaces: state is the first, pgrp the third.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}
