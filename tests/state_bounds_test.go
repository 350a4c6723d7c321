package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A milestone attempted more than 20 times lists its last 20 attempts in
// state.json, sums up the others there, and the timeline tells every one:
// the totals (counters, statistics, doctor's rows and signatures) are the
// run's whole, and state.json stays small.
func TestStateListsTheLastAttemptsOfALongMilestone(t *testing.T) {
	repo := resumeRepo(t, map[string]string{
		"TASK.md": "- [ ] one\n",
		"runr.yaml": "stop:\n  max_milestone_retries: 1000\n  max_consecutive_fails: 0\n  same_error: 0\n  noop: 0\n" +
			"  no_progress: 0\n  circuit_breaker: 0\n  max_edge: 0\n  max_retry_rate: 0\n  max_reject_rate: 0\n",
	})
	const calls = 31
	verify := `if [ $(( $(wc -l < count.txt) % 2 )) -eq 0 ]; then echo even failure; else echo odd failure; fi; exit 1`
	code, stdout, stderr := resRunr(t, repo, nil, "run", "--task", "TASK.md", "--max-iterations", "31", "--max-ticks", "1000",
		"--verify", verify, "--quiet", "--", "fakeagent", "--do", "touch-count count.txt")
	require.Equal(t, 128, code, "%s\n%s", stdout, stderr)
	runDir := resRunDir(t, repo)

	data, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	require.NoError(t, err)
	assert.Less(t, len(data), 16<<10, "state.json of a run of %d attempts", calls)
	var st struct {
		Iteration  int `json:"iteration"`
		Milestones []struct {
			Attempts []struct {
				Tick           int    `json:"tick"`
				Outcome        string `json:"outcome"`
				ErrorSignature string `json:"error_signature"`
			} `json:"attempts"`
			Earlier *struct {
				Count    int            `json:"count"`
				Outcomes map[string]int `json:"outcomes"`
			} `json:"earlier_attempts"`
		} `json:"milestones"`
		Counters struct {
			Attempts int `json:"attempts"`
		} `json:"counters"`
		Statistics struct {
			Attempted int `json:"attempted"`
		} `json:"statistics"`
	}
	require.NoError(t, json.Unmarshal(data, &st))
	require.Equal(t, calls, st.Iteration)
	m := st.Milestones[0]
	require.Len(t, m.Attempts, 20)
	require.NotNil(t, m.Earlier)
	assert.Equal(t, calls-20, m.Earlier.Count)
	assert.Equal(t, map[string]int{"failed": calls - 20}, m.Earlier.Outcomes)
	assert.Equal(t, 1, st.Statistics.Attempted)

	// The timeline has an attempt event for each closed attempt, listed in
	// state.json or not, with the attempt's own figures.
	f, err := os.Open(filepath.Join(runDir, "timeline.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	events, signatures := 0, map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Outcome     string `json:"outcome"`
				Signature   string `json:"signature"`
				AttemptTick *int   `json:"attempt_tick"`
				Log         string `json:"log"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev.Type != "attempt" {
			continue
		}
		events++
		assert.Equal(t, "failed", ev.Data.Outcome)
		assert.NotNil(t, ev.Data.AttemptTick)
		assert.True(t, strings.HasPrefix(ev.Data.Log, "logs/tick-"), "log %q", ev.Data.Log)
		signatures[ev.Data.Signature]++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, st.Counters.Attempts, events)
	closed := m.Earlier.Count
	for _, a := range m.Attempts {
		if a.Outcome == "failed" {
			closed++
		}
	}
	assert.Equal(t, closed, events, "every closed attempt is in the timeline")
	assert.Len(t, signatures, 2, "two error signatures: %v", signatures)

	// doctor counts them all: the milestone's attempts, and how often each
	// signature occurred, from state.json and the timeline.
	code, stdout, stderr = resRunr(t, repo, nil, "doctor", "latest", "--json")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	var rep struct {
		Milestones []struct {
			Attempts int      `json:"attempts"`
			Outcomes []string `json:"outcomes"`
		} `json:"milestones"`
		Evidence struct {
			Signatures []struct {
				Signature string `json:"signature"`
				Count     int    `json:"count"`
			} `json:"signatures"`
		} `json:"evidence"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, calls, rep.Milestones[0].Attempts)
	assert.Len(t, rep.Milestones[0].Outcomes, calls)
	got := map[string]int{}
	for _, s := range rep.Evidence.Signatures {
		got[s.Signature] = s.Count
	}
	assert.Equal(t, signatures, got)

	code, stdout, stderr = resRunr(t, repo, nil, "status", "latest")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "31 attempts")
}

// A run whose state.json an older runr wrote, with the task text inline
// and no task.md, resumes: the agent's prompt carries the task, and the
// text moves to task.md.
func TestOldStateWithTheTaskInlineResumes(t *testing.T) {
	repo, runDir := seStoppedRun(t)
	taskPath := filepath.Join(runDir, "task.md")
	task, err := os.ReadFile(taskPath)
	require.NoError(t, err)
	require.Equal(t, "Do it.\n", string(task))
	seEditState(t, runDir, func(st map[string]any) {
		st["task"] = map[string]any{"file": "TASK.md", "prompt": string(task)}
	})
	require.NoError(t, os.Remove(taskPath))

	code, stdout, stderr := resRunr(t, repo, nil, "resume", filepath.Base(runDir), "--max-iterations", "1", "--quiet")
	require.Equal(t, 128, code, "%s\n%s", stdout, stderr)
	prompt, err := os.ReadFile(filepath.Join(runDir, "prompts", "tick-0002.md"))
	require.NoError(t, err)
	assert.Contains(t, string(prompt), "# Task\n\nDo it.")
	moved, err := os.ReadFile(taskPath)
	require.NoError(t, err)
	assert.Equal(t, task, moved)
	data, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), `"prompt"`)
}

// An agent that changes more files out of scope than a stop lists: the
// stop's details list the first 100 with the count of the rest, and every
// view of them is as bounded: state.json, stop.json, report.md, the
// summary, doctor (text and --json), run --json, the guard event and the
// transcript. No stash command is offered for a list it would not cover.
func TestStopDetailsListAtMost100Files(t *testing.T) {
	const files, listed = 250, 100
	repo := resumeRepo(t, map[string]string{"README.md": "x\n"})
	agent := fmt.Sprintf(`for i in $(seq 1 %d); do echo x > out$i.txt; done; echo RUNR_STATUS: done`, files)
	code, stdout, stderr := resRunr(t, repo, nil, "run", "--prompt", "work", "--allow", "src/**", "--", "sh", "-c", agent)
	require.Equal(t, 2, code, "%s\n%s", stdout, stderr)
	more := fmt.Sprintf("and %d more", files-listed)
	assert.Contains(t, stdout, more, "the summary's files line")
	assert.NotContains(t, stdout, "git stash push", "a stash of 100 of 250 files is no advice")
	runDir := resRunDir(t, repo)

	var st struct {
		StopReason struct {
			Message string `json:"message"`
			Details struct {
				Files        []string `json:"files"`
				FilesOmitted int      `json:"files_omitted"`
				Rules        []string `json:"rules"`
				Committed    []string `json:"committed"`
			} `json:"details"`
		} `json:"stop_reason"`
	}
	data, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &st))
	d := st.StopReason.Details
	assert.Len(t, d.Files, listed)
	assert.Len(t, d.Rules, listed)
	assert.Equal(t, files-listed, d.FilesOmitted)
	assert.NotNil(t, d.Committed)
	assert.Contains(t, st.StopReason.Message, fmt.Sprintf("%d changed files outside the scope", files))
	assert.Contains(t, st.StopReason.Message, more)
	assert.Equal(t, listed, strings.Count(st.StopReason.Message, ".txt"), "the message names the listed files only")

	var stop struct {
		Evidence struct {
			Files        []string `json:"files"`
			FilesOmitted int      `json:"files_omitted"`
		} `json:"evidence"`
		Diagnosis string `json:"diagnosis"`
	}
	data, err = os.ReadFile(filepath.Join(runDir, "stop.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &stop))
	assert.Len(t, stop.Evidence.Files, listed)
	assert.Equal(t, files-listed, stop.Evidence.FilesOmitted)
	assert.Contains(t, stop.Diagnosis, fmt.Sprintf("The agent changed %d files outside its scope", files))
	assert.Contains(t, stop.Diagnosis, more)
	md, err := os.ReadFile(filepath.Join(runDir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), more)

	code, text, _ := resRunr(t, repo, nil, "doctor", "latest")
	require.Equal(t, 0, code)
	assert.Contains(t, text, "Files: ")
	assert.Contains(t, text, more)
	code, js, _ := resRunr(t, repo, nil, "doctor", "latest", "--json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(js), &stop))
	assert.Len(t, stop.Evidence.Files, listed)
	assert.Equal(t, files-listed, stop.Evidence.FilesOmitted)

	// The guard event in the timeline, and the transcript that shows it.
	tl, err := os.ReadFile(filepath.Join(runDir, "timeline.jsonl"))
	require.NoError(t, err)
	var guard struct {
		Files        []string `json:"files"`
		FilesOmitted int      `json:"files_omitted"`
	}
	for _, l := range strings.Split(string(tl), "\n") {
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "guard" {
			require.NoError(t, json.Unmarshal(ev.Data, &guard))
		}
	}
	assert.Len(t, guard.Files, listed)
	assert.Equal(t, files-listed, guard.FilesOmitted)
	code, logs, _ := resRunr(t, repo, nil, "logs")
	require.Equal(t, 0, code)
	assert.Contains(t, logs, more)

	// A run on the dirty tree it left: dirty_worktree lists 100 as well.
	code, out, _ := resRunr(t, repo, nil, "run", "--prompt", "again", "--json", "--", "sh", "-c", "echo RUNR_STATUS: done")
	require.Equal(t, 4, code, out)
	var sum struct {
		StopReason struct {
			Details struct {
				Files        []string `json:"files"`
				FilesOmitted int      `json:"files_omitted"`
			} `json:"details"`
		} `json:"stop_reason"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	assert.Len(t, sum.StopReason.Details.Files, listed)
	assert.Equal(t, files-listed, sum.StopReason.Details.FilesOmitted)
	code, dry, _ := resRunr(t, repo, nil, "run", "--dry-run", "--prompt", "again", "--", "sh", "-c", "true")
	require.Equal(t, 4, code, dry)
	assert.Contains(t, dry, more)
}
