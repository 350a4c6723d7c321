package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// doctorActions runs `runr doctor latest` in repo and returns its next
// actions: the lines "$ COMMAND", without the prompt.
func doctorActions(t *testing.T, repo string) []string {
	t.Helper()
	code, out, errOut := runrCmd(t, repo, "doctor", "latest")
	require.Equal(t, 0, code, "runr doctor latest\nstdout: %s\nstderr: %s", out, errOut)
	var cmds []string
	for _, line := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(line, "$ "); ok {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// summaryCommands are the commands a run's summary says to run: its
// "$ COMMAND" lines, without the prompt.
func summaryCommands(summary string) []string {
	var cmds []string
	for _, line := range strings.Split(summary, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "$ "); ok {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// shellIn runs one command line with sh -c in repo, as a person pasting it
// would, and returns its exit code and combined output.
func shellIn(t *testing.T, repo, line string) (int, string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = repo
	cmd.Env = testEnv(repo)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// stopOf reads the newest run's stop reason code and exit code.
func stopOf(t *testing.T, repo string) (string, int) {
	t.Helper()
	st := readState(t, repo)
	r, _ := st["stop_reason"].(map[string]any)
	code, _ := r["exit_code"].(float64)
	return stopCode(st), int(code)
}

func writeFiles(t *testing.T, repo string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(repo, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
}

// TestDoctorNextActionsAreExecutable stops real runs for reasons a next
// action can fix, runs every "$ " line of `runr doctor latest` with sh -c in
// the repository, and checks that the run got past the reason that stopped
// it: the fake agent does the work on the calls after the stop, so the
// resumed run completes.
func TestDoctorNextActionsAreExecutable(t *testing.T) {
	tests := []struct {
		name string
		// committed and dirty are the repository's files before the run:
		// committed ones in the first commit, dirty ones left uncommitted.
		committed, dirty map[string]string
		args             []string
		reason           string
		exit             int
		// want are the next actions, with ID for the run id.
		want []string
		// person is what the user does first, as a hint told them.
		person func(t *testing.T, repo string)
		check  func(t *testing.T, repo string)
	}{
		{
			name:   "timeout grants the run's time again",
			args:   []string{"--prompt", "work", "--time", "3s", "--", "fakeagent", "--do", "#1: sleep 30s", "--do", "#2+: write a.txt done; status done"},
			reason: "timeout", exit: 124,
			want: []string{"runr resume ID --time 3s"},
		},
		{
			name:   "max_ticks grants the run's ticks again",
			args:   []string{"--prompt", "work", "--max-ticks", "2", "--", "fakeagent", "--do", "#1-2: touch-count calls.txt", "--do", "#3+: write a.txt done; status done"},
			reason: "max_ticks", exit: 125,
			want: []string{"runr resume ID --max-ticks 2"},
		},
		{
			name:   "max_iterations grants the run's iterations again",
			args:   []string{"--prompt", "work", "--max-iterations", "1", "--", "fakeagent", "--do", "#1: touch-count calls.txt", "--do", "#2+: write a.txt done; status done"},
			reason: "max_iterations", exit: 128,
			// One more call is enough: its work is still verified and
			// checkpointed once the budget is reached.
			want: []string{"runr resume ID --max-iterations 1"},
		},
		{
			name:   "lockfile_violation allows the dependency change",
			args:   []string{"--prompt", "work", "--", "fakeagent", "--do", "#1: write go.sum h1:abc; status done", "--do", "#2+: write a.txt done; status done"},
			reason: "lockfile_violation", exit: 3,
			want: []string{"runr resume ID --allow-deps"},
			check: func(t *testing.T, repo string) {
				assert.FileExists(t, filepath.Join(repo, "go.sum"), "the allowed lockfile change stays")
			},
		},
		{
			name:      "guard_violation stashes the out-of-scope files and resumes",
			committed: map[string]string{"runr.yaml": "scope:\n  allow: [\"src/**\"]\n", "README.md": "readme\n", "notes.txt": "keep\n"},
			args: []string{"--prompt", "work", "--", "fakeagent",
				"--do", "#1: write src/a.txt in scope; write odd$name.txt out; append README.md edited; delete notes.txt; status done",
				"--do", "#2+: write src/b.txt in scope; status done"},
			reason: "guard_violation", exit: 2,
			want: []string{"git stash push --include-untracked -- README.md notes.txt 'odd$name.txt'", "runr resume ID"},
			check: func(t *testing.T, repo string) {
				assert.NoFileExists(t, filepath.Join(repo, "odd$name.txt"))
				b, err := os.ReadFile(filepath.Join(repo, "README.md"))
				require.NoError(t, err)
				assert.Equal(t, "readme\n", string(b), "the out-of-scope edit is stashed")
				assert.FileExists(t, filepath.Join(repo, "notes.txt"), "the out-of-scope delete is stashed")
				assert.FileExists(t, filepath.Join(repo, "src", "a.txt"), "in-scope work stays")
				assert.Contains(t, gitOut(t, repo, testEnv(repo), "stash", "show", "--include-untracked", "--name-only"), "odd$name.txt")
			},
		},
		{
			name:      "dirty_worktree stashes only the dirty files and resumes",
			committed: map[string]string{"README.md": "readme\n"},
			dirty:     map[string]string{"TASK.md": "- [ ] write a.txt\n", "mine.txt": "my work\n", "README.md": "my edit\n"},
			args:      []string{"--task", "TASK.md", "--", "fakeagent", "--do", "write a.txt done; status done"},
			reason:    "dirty_worktree", exit: 4,
			want: []string{"git stash push --include-untracked -- README.md mine.txt", "runr resume ID"},
			check: func(t *testing.T, repo string) {
				assert.FileExists(t, filepath.Join(repo, "TASK.md"), "the task file is not stashed")
				assert.FileExists(t, filepath.Join(repo, "a.txt"))
				assert.NoFileExists(t, filepath.Join(repo, "mine.txt"))
			},
		},
		{
			name:      "same_error_repeated resumes with fresh streaks",
			committed: map[string]string{"runr.yaml": "verify:\n  commands: [\"test -f ok.txt\"]\n"},
			args:      []string{"--prompt", "work", "--", "fakeagent", "--do", "#1-3: touch-count calls.txt; status done", "--do", "#4+: write ok.txt ok; status done"},
			reason:    "same_error_repeated", exit: 41,
			want: []string{"runr resume ID"},
		},
		{
			name:      "verification_timeout resumes with --force once verify.timeout is raised",
			committed: map[string]string{"runr.yaml": "verify:\n  commands: [\"sleep 2\"]\n  timeout: 1s\n"},
			args:      []string{"--prompt", "work", "--", "fakeagent", "--do", "write a.txt done; status done"},
			reason:    "verification_timeout", exit: 11,
			want: []string{"runr resume ID --force"},
			person: func(t *testing.T, repo string) {
				writeFiles(t, repo, map[string]string{"runr.yaml": "verify:\n  commands: [\"sleep 2\"]\n  timeout: 30s\n"})
			},
		},
		{
			name: "worker_blocked: the answer committed to the repository reaches the agent on resume",
			args: []string{"--prompt", "write a.txt", "--", "sh", "-c",
				`if [ -f NOTES.md ]; then cp NOTES.md a.txt; echo 'RUNR_STATUS: done'; else echo 'RUNR_STATUS: blocked what should a.txt say?'; fi`},
			reason: "worker_blocked", exit: 30,
			want: []string{"runr resume ID"},
			person: func(t *testing.T, repo string) {
				writeCommitted(t, repo, map[string]string{"NOTES.md": "the answer\n"})
			},
			check: func(t *testing.T, repo string) {
				b, err := os.ReadFile(filepath.Join(repo, "a.txt"))
				require.NoError(t, err)
				assert.Equal(t, "the answer\n", string(b), "the agent read the answer")
			},
		},
		{
			name:      "review_rejected resumes once the person has read the review",
			committed: map[string]string{"runr.yaml": "review:\n  command: [sh, review.sh]\n", "review.sh": "test -e good.txt && exit 0\necho 'bad.txt is not acceptable'\nexit 2\n"},
			args:      []string{"--prompt", "work", "--", "fakeagent", "--do", "#1: write bad.txt 1; status done", "--do", "#2+: write good.txt 1; status done"},
			reason:    "review_rejected", exit: 21,
			want: []string{"runr resume ID"},
		},
		{
			name:      "noop_streak resumes with fresh streaks",
			committed: map[string]string{"runr.yaml": "verify:\n  commands: [\"test -f a.txt\"]\nstop:\n  same_error: 0\n  max_milestone_retries: 0\n"},
			args:      []string{"--prompt", "work", "--", "fakeagent", "--do", "#1-3: print thinking; status done", "--do", "#4+: write a.txt done; status done"},
			reason:    "noop_streak", exit: 42,
			want: []string{"runr resume ID"},
		},
		{
			name:      "user_stopped (runr stop) continues where it stopped",
			committed: map[string]string{"runr.yaml": "verify:\n  commands: [\"test -f a.txt\"]\n"},
			args: []string{"--prompt", "work", "--", "sh", "-c",
				`n=$(($(cat ../calls 2>/dev/null || echo 0) + 1)); echo $n > ../calls; if [ $n = 1 ]; then runr stop "$RUNR_RUN_ID"; else echo done > a.txt; fi; echo 'RUNR_STATUS: done'`},
			reason: "user_stopped", exit: 130,
			want: []string{"runr resume ID"},
		},
		{
			name:      "stalled resumes",
			committed: map[string]string{"runr.yaml": "agent:\n  idle_timeout: 1s\n  kill_grace: 1s\n"},
			args:      []string{"--prompt", "work", "--", "fakeagent", "--do", "#1: hang", "--do", "#2+: write a.txt done; status done"},
			reason:    "stalled", exit: 126,
			want: []string{"runr resume ID"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			if len(tt.committed) > 0 {
				writeCommitted(t, repo, tt.committed)
			}
			writeFiles(t, repo, tt.dirty)

			cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"run", "--quiet"}, tt.args...)...)
			cmd.Dir = repo
			cmd.Env = testEnv(repo)
			var summary, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &summary, &errOut
			_ = cmd.Run()
			require.Equal(t, tt.exit, cmd.ProcessState.ExitCode(), "runr run: %s%s", &summary, &errOut)
			code, _ := stopOf(t, repo)
			require.Equal(t, tt.reason, code)
			runDir, err := latestRunDir(repo)
			require.NoError(t, err)
			require.NoError(t, checkStoppedRun(runDir, []string{tt.reason}), "report.md and stop.json after the stop")

			id := filepath.Base(runDir)
			actions := doctorActions(t, repo)
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "ID", id))
			}
			require.Equal(t, want, actions, "next actions of %s", tt.reason)
			// The run's own summary gives the same commands: following it
			// is following the doctor's.
			assert.Equal(t, want, summaryCommands(summary.String()), "the summary's commands of %s:\n%s", tt.reason, &summary)

			if tt.person != nil {
				tt.person(t, repo)
			}
			for _, a := range actions {
				code, out := shellIn(t, repo, a)
				if !strings.HasPrefix(a, "runr resume ") {
					require.Equal(t, 0, code, "%s\n%s", a, out)
				}
			}

			got, exit := stopOf(t, repo)
			assert.NotEqual(t, tt.reason, got, "the next actions did not get the run past %s", tt.reason)
			assert.Equal(t, "complete", got)
			assert.Equal(t, 0, exit)
			assert.NoError(t, checkStoppedRun(runDir, []string{"complete"}))
			if tt.check != nil {
				tt.check(t, repo)
			}
		})
	}
}

// TestDoctorReportOfARealRun checks report.md and stop.json of a run that
// approved one milestone and then hit the same error three times: terminal
// status, reason and rule, statistics, the milestone table, loop counters,
// cost, diagnosis, evidence and the next commands.
func TestDoctorReportOfARealRun(t *testing.T) {
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{
		"TASK.md":   "- [ ] first step\n- [ ] second step\n",
		"runr.yaml": "verify:\n  commands: [\"test ! -e second.txt || grep -q good second.txt\"]\n",
	})
	code, out, errOut := runrCmd(t, repo, "run", "--quiet", "--task", "TASK.md", "--", "fakeagent",
		"--do", "m1: write first.txt ok; status done",
		"--do", "m2: write second.txt bad; touch-count calls.txt; eprint compile error in second.txt; status done")
	require.Equal(t, 41, code, "stdout: %s\nstderr: %s", out, errOut)
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	id := filepath.Base(runDir)

	b, err := os.ReadFile(filepath.Join(runDir, "report.md"))
	require.NoError(t, err)
	report := string(b)
	for _, want := range []string{
		"# runr run " + id,
		"- **Run status:** stopped",
		"- **Terminal status:** done_partial",
		"- **Stop reason:** `same_error_repeated`: Same error again and again (stuck, guardrail, exit code 41)",
		"- **Rule:** same_error: ",
		"## Diagnosis\n\nThe same error came back 3 times in a row (limit 3)",
		"## Statistics",
		"| milestones | 1 approved, 0 failed, 0 rejected, 2 attempted of 2 |",
		"| ticks | ",
		"| iterations | 4 |",
		"| cost | $0.00; 0 input + 0 output tokens |",
		"## Milestones",
		"| 1 | first step | approved | 1 | approved |",
		"| 2 | second step | in_progress | 3 | failed x3 |",
		"## Loop counters",
		"| same_error | 3 |",
		"| backward edges | verify->implement 3 |",
		"## Evidence",
		"Last failure at tick ",
		"## Other rules",
		"## Next",
		"```sh\nrunr resume " + id + "\n```",
	} {
		assert.Contains(t, report, want)
	}
	assert.NotContains(t, report, "## Warnings", "a real run's files are all readable")

	b, err = os.ReadFile(filepath.Join(runDir, "stop.json"))
	require.NoError(t, err)
	var stop struct {
		RunID          string `json:"run_id"`
		TerminalStatus string `json:"terminal_status"`
		Reason         struct {
			Code     string `json:"code"`
			ExitCode int    `json:"exit_code"`
		} `json:"reason"`
		Evidence struct {
			Signatures []struct {
				Count int `json:"count"`
			} `json:"signatures"`
			Timeline struct {
				Events   int    `json:"events"`
				LastType string `json:"last_type"`
			} `json:"timeline"`
		} `json:"evidence"`
		NextActions []string `json:"next_actions"`
	}
	require.NoError(t, json.Unmarshal(b, &stop))
	assert.Equal(t, id, stop.RunID)
	assert.Equal(t, "done_partial", stop.TerminalStatus)
	assert.Equal(t, "same_error_repeated", stop.Reason.Code)
	assert.Equal(t, 41, stop.Reason.ExitCode)
	require.NotEmpty(t, stop.Evidence.Signatures)
	assert.Equal(t, 3, stop.Evidence.Signatures[0].Count)
	assert.Positive(t, stop.Evidence.Timeline.Events)
	assert.Equal(t, []string{"runr resume " + id}, stop.NextActions, "doctor's report never suggests doctor")

	// runr doctor tells the same as the files.
	assert.Equal(t, stop.NextActions, doctorActions(t, repo))
}

// TestDoctorIterationBudgetJudgesTheLastCall: a run whose one allowed agent
// call does the work completes; the budget stops only a further call.
func TestDoctorIterationBudgetJudgesTheLastCall(t *testing.T) {
	repo := newRepo(t)
	writeCommitted(t, repo, map[string]string{"runr.yaml": "verify:\n  commands: [\"test -f a.txt\"]\n"})
	code, out, errOut := runrCmd(t, repo, "run", "--quiet", "--prompt", "work", "--max-iterations", "1", "--", "fakeagent", "--do", "write a.txt done; status done")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
	got, _ := stopOf(t, repo)
	assert.Equal(t, "complete", got)

	repo = newRepo(t)
	code, _, _ = runrCmd(t, repo, "run", "--quiet", "--prompt", "work", "--max-iterations", "1", "--", "fakeagent", "--do", "touch-count calls.txt")
	assert.Equal(t, 128, code, "a second call is not made")
	b, err := os.ReadFile(filepath.Join(repo, "calls.txt"))
	require.NoError(t, err)
	assert.Equal(t, "1\n", string(b))
}

// TestCompletedRunAdviceFollowedLiterally: a run that completed in the
// checkout without checkpoint commits says how to look at it and how to
// commit what it left; each "$ " line of its summary, run as printed (the
// person types the commit message in their editor), does what it says.
func TestCompletedRunAdviceFollowedLiterally(t *testing.T) {
	repo := newRepo(t)
	cmd := exec.Command(filepath.Join(binDir, "runr"), "run", "--quiet", "--prompt", "work", "--verify", "test -f a.txt", "--",
		"fakeagent", "--do", "write a.txt done; write docs/b.txt more; status done")
	cmd.Dir = repo
	cmd.Env = testEnv(repo)
	out, err := cmd.Output()
	require.NoError(t, err, "runr run: %s", out)
	cmds := summaryCommands(string(out))
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	id := filepath.Base(runDir)
	require.Equal(t, []string{"runr status " + id, "git add -A && git commit"}, cmds, "the summary:\n%s", out)
	assert.Equal(t, cmds[:1], doctorActions(t, repo), "doctor gives the summary's command")

	editor := filepath.Join(t.TempDir(), "editor.sh")
	require.NoError(t, os.WriteFile(editor, []byte("#!/bin/sh\necho 'Take the run'\"'\"'s work' > \"$1\"\n"), 0o755))
	for _, c := range cmds {
		sh := exec.Command("sh", "-c", c)
		sh.Dir = repo
		sh.Env = append(testEnv(repo), "GIT_EDITOR="+editor)
		b, err := sh.CombinedOutput()
		require.NoError(t, err, "%s\n%s", c, b)
		if strings.HasPrefix(c, "runr status") {
			assert.Contains(t, string(b), id)
			assert.Contains(t, string(b), "complete")
		}
	}
	assert.Empty(t, gitOut(t, repo, testEnv(repo), "status", "--porcelain"), "everything the run left is committed")
	assert.Equal(t, "a.txt\ndocs/b.txt", gitOut(t, repo, testEnv(repo), "show", "--format=", "--name-only", "HEAD"))
	assert.Equal(t, "Take the run's work", gitOut(t, repo, testEnv(repo), "log", "-1", "--format=%B"))
}
