package report

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

// transcriptTimeline holds each event the transcript shows, as runr writes
// it, beside what an older runr wrote (a tick without its outcome and
// cost), an event type this runr does not know (phase_ended), and fields
// of the wrong type (tick 4's record).
const transcriptTimeline = `{"seq":1,"ts":"2026-11-21T23:00:17Z","type":"run_started","tick":0,"data":{"milestones":2,"repo":"/src/shop","task_file":"TASK.md"}}
{"seq":2,"ts":"2026-11-21T23:00:17Z","type":"sandbox","tick":0,"phase":"implement","data":{"abi":0,"confined":false,"kernel":"6.8","mode":"auto","namespace":false,"namespace_error":"","read_only":null,"top_level_only":false,"writable":null}}
{"seq":3,"ts":"2026-11-21T23:00:18Z","type":"worktree_created","tick":0,"phase":"implement","data":{"branch":"runr/r1","path":"/src/shop/.git/runr/worktrees/r1"}}
{"seq":4,"ts":"2026-11-21T23:00:18Z","type":"process_started","tick":1,"phase":"implement","data":{"argv0":"claude","pgid":41,"pid":41}}
{"seq":5,"ts":"2026-11-21T23:00:19Z","type":"activity","tick":1,"phase":"implement","data":{"kind":"tool","text":"a_test.go","tool":"Edit"}}
{"seq":6,"ts":"2026-11-21T23:00:19Z","type":"activity","tick":1,"phase":"implement","data":{"kind":"tool_error","text":"exit 1\u001b[2J","tool":"Bash"}}
{"seq":7,"ts":"2026-11-21T23:00:20Z","type":"activity","tick":1,"phase":"implement","data":{"kind":"message","text":"done"}}
{"seq":8,"ts":"2026-11-21T23:00:21Z","type":"process_ended","tick":1,"phase":"implement","data":{"bytes":812,"canceled":false,"duration_ms":2500,"exit_code":0,"idle":false,"timed_out":false}}
{"seq":9,"ts":"2026-11-21T23:00:21Z","type":"agent_call","tick":1,"phase":"implement","data":{"agent":"claude","cache_read_tokens":0,"cache_write_tokens":0,"cost_estimated_usd":0,"cost_reported_usd":0.42,"cost_source":"reported","duration_ms":2500,"input_tokens":10,"model":"m","output_tokens":9}}
{"seq":10,"ts":"2026-11-21T23:00:21Z","type":"tick","tick":1,"phase":"verify","data":{"added":1,"cache_read_tokens":0,"cache_write_tokens":0,"call_cost_usd":0.42,"closest":"noop 50%","cost_source":"reported","cost_usd":0.42,"deleted":0,"input_tokens":10,"iteration":1,"milestone":1,"model":"m","modified":2,"next":"verify","outcome":"agent done","output_tokens":9,"phase":"implement"}}
{"seq":11,"ts":"2026-11-21T23:00:22Z","type":"process_started","tick":2,"phase":"verify","data":{"argv0":"sh","command":"go test ./...","pgid":42,"pid":42}}
{"seq":12,"ts":"2026-11-21T23:00:23Z","type":"process_ended","tick":2,"phase":"verify","data":{"bytes":20,"canceled":true,"duration_ms":1200,"exit_code":1,"idle":true,"timed_out":true}}
{"seq":13,"ts":"2026-11-21T23:00:23Z","type":"attempt","tick":2,"phase":"implement","data":{"agent":{"kind":"claude"},"attempt_tick":1,"cost_usd":0.42,"duration_ms":3700,"error":"FAIL","exit_code":1,"iteration":1,"log":"logs/tick-0001-implement.log","milestone":1,"outcome":"failed","progress":true,"signature":"go test: TestX"}}
{"seq":14,"ts":"2026-11-21T23:00:23Z","type":"tick","tick":2,"phase":"implement","data":{"cost_usd":0.42,"iteration":1,"milestone":1,"next":"implement","outcome":"verify failed","phase":"verify","verify":"failed","verify_ms":1200}}
{"seq":15,"ts":"2026-11-21T23:00:24Z","type":"guard","tick":3,"phase":"implement","data":{"files":["vendor/a.go","vendor/b.go"],"rule":"scope","rules":["scope.deny vendor/**","scope.deny vendor/**"]}}
{"seq":16,"ts":"2026-11-21T23:00:24Z","type":"attempt","tick":3,"phase":"implement","data":{"milestone":1,"outcome":"approved","signature":""}}
{"seq":17,"ts":"2026-11-21T23:00:24Z","type":"checkpoint_commit","tick":3,"phase":"checkpoint","data":{"milestone":1,"sha":"0123456789abcdef0123"}}
{"seq":18,"ts":"2026-11-21T23:00:24Z","type":"milestone_approved","tick":3,"phase":"checkpoint","data":{"goal":"one","milestone":1}}
{"seq":19,"ts":"2026-11-21T23:00:24Z","type":"tick","tick":3,"phase":"implement","data":{"iteration":1,"milestone":2,"next":"implement","phase":"checkpoint"}}
{"seq":20,"ts":"2026-11-21T23:00:25Z","type":"phase_ended","tick":4,"phase":"implement","data":{"exit_code":0}}
{"seq":21,"ts":"2026-11-21T23:00:25Z","type":"milestone_failed","tick":4,"phase":"implement","data":{"milestone":2,"retries":1}}
{"seq":22,"ts":"2026-11-21T23:00:25Z","type":"leftovers_stopped","tick":4,"phase":"implement","data":{"pids":[51,52]}}
{"seq":23,"ts":"2026-11-21T23:00:25Z","type":"tick","tick":4,"phase":"implement","data":{"milestone":"two","next":5,"outcome":"agent incomplete","added":"x","verify":"passed"}}
{"seq":24,"ts":"2026-11-21T23:00:26Z","type":"stop","tick":4,"phase":"implement","data":{"code":"user_stopped","condition":"signal","exit_code":130,"message":"SIGINT\u001b[2J","milestones":2,"approved":1,"terminal_status":"aborted_user"}}
{"seq":25,"ts":"2026-11-21T23:01:00Z","type":"run_resumed","tick":4,"phase":"implement","data":{"milestone":2,"phase":"implement"}}
{"seq":26,"ts":"2026-11-21T23:01:01Z","type":"worker_started","tick":4,"phase":"implement","data":{"branch":"runr/r1/m2","milestone":2,"requeue":0,"start":"abc","worker":1}}
{"seq":27,"ts":"2026-11-21T23:01:01Z","type":"worker_started","tick":4,"phase":"implement","data":{"branch":"runr/r1/m3","milestone":3,"requeue":2,"start":"abc","worker":2}}
{"seq":28,"ts":"2026-11-21T23:01:02Z","type":"worker_done","tick":4,"phase":"implement","data":{"error":"lock held","milestone":2,"worker":1}}
{"seq":29,"ts":"2026-11-21T23:01:02Z","type":"worker_done","tick":4,"phase":"implement","data":{"code":"complete","milestone":3,"run_id":"r2","worker":2}}
{"seq":30,"ts":"2026-11-21T23:01:03Z","type":"merge","tick":4,"phase":"implement","data":{"commit":"0123456789abcdef0123","milestone":3,"outcome":"merged","worker":2}}
{"seq":31,"ts":"2026-11-21T23:01:03Z","type":"merge","tick":4,"phase":"implement","data":{"files":["a.go","b.go"],"milestone":2,"outcome":"conflict","worker":1}}
{"seq":32,"ts":"2026-11-21T23:01:03Z","type":"merge","tick":4,"phase":"implement","data":{"command":"go test ./...","milestone":2,"outcome":"verify_failed","worker":1}}
{"seq":33,"ts":"2026-11-21T23:01:03Z","type":"requeue","tick":4,"phase":"implement","data":{"command":"","files":["a.go"],"milestone":2,"requeue":1,"worker":1}}
{"seq":34,"ts":"2026-11-21T23:01:04Z","type":"run_started","tick":0,"data":{"milestones":1,"repo":"/src/shop","task_file":""}}
{"seq":35,"ts":"2026-11-21T23:01:05Z","type":"stop","tick":5,"phase":"stopped","data":{"code":"complete","condition":"","exit_code":0,"message":"all milestones approved"}}
`

// The transcript of a timeline, whole and one tick at a time: each event
// type's line, text from the agent made visible, a failed check's output
// tail, the milestone each tick works on.
func TestTranscript(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "tick-0002-verify.log"), []byte("ok a\nFAIL TestX\n\x1b[31mred\x1b[0m\n"), 0o644))
	path := filepath.Join(dir, timelineFile)
	require.NoError(t, os.WriteFile(path, []byte(transcriptTimeline), 0o644))
	st := &state.State{Milestones: []state.Milestone{{Goal: "one"}, {Goal: "two\nlines"}}}

	tests := []struct {
		tick int
		want string
	}{
		{0, `run started · task TASK.md · 2 milestones

tick 0 · milestone 1/2 "one" · implement
  worktree /src/shop/.git/runr/worktrees/r1 on branch runr/r1

tick 1 · milestone 1/2 "one" · implement
  > Edit a_test.go
  ! Bash failed: exit 1\x1b[2J
  " done
  agent exited 0 after 2.5s
  next: verify · agent done · files +1 ~2 -0 · $0.42 · closest rule: noop 50%

tick 2 · milestone 1/2 "one" · verify
  verify exited 1 after 1.2s, timed out, idle too long, stopped
  | ok a
  | FAIL TestX
  | \x1b[31mred\x1b[0m
  attempt failed (error go test: TestX)
  next: implement · verify failed in 1.2s · $0.42

tick 3 · milestone 1/2 "one" · implement
  guard scope: vendor/a.go, vendor/b.go
  attempt approved
  commit 0123456789ab
  milestone 1 approved
  next: implement

tick 4 · milestone 2/2 "two\\nlines" · implement
  milestone 2 failed after 1 retry
  stopped 2 process(es) the agent left behind
  next:  · agent incomplete (verify passed in 0ms) · files +0 ~0 -0
stop: user_stopped (exit 130): SIGINT\x1b[2J
run resumed at milestone 2, implement
worker 1 · milestone 2 started on runr/r1/m2
worker 2 · milestone 3 started on runr/r1/m3 (returned 2×)
worker 1 · milestone 2: its run failed: lock held
worker 2 · milestone 3: its run stopped: complete
worker 2 · milestone 3 merged, commit 0123456789ab
worker 1 · milestone 2 did not merge: conflict in a.go, b.go; undone
worker 1 · milestone 2 did not merge: go test ./... failed on the merged tree; undone
worker 1 · milestone 2 returned to a worker (1)
run started · task --prompt · 1 milestone
stop: complete (exit 0): all milestones approved
`},
		{2, `
tick 2 · milestone 1/2 "one" · verify
  verify exited 1 after 1.2s, timed out, idle too long, stopped
  | ok a
  | FAIL TestX
  | \x1b[31mred\x1b[0m
  attempt failed (error go test: TestX)
  next: implement · verify failed in 1.2s · $0.42
`},
		{4, `
tick 4 · milestone 2/2 "two\\nlines" · implement
  milestone 2 failed after 1 retry
  stopped 2 process(es) the agent left behind
  next:  · agent incomplete (verify passed in 0ms) · files +0 ~0 -0
stop: user_stopped (exit 130): SIGINT\x1b[2J
run resumed at milestone 2, implement
worker 1 · milestone 2 started on runr/r1/m2
worker 2 · milestone 3 started on runr/r1/m3 (returned 2×)
worker 1 · milestone 2: its run failed: lock held
worker 2 · milestone 3: its run stopped: complete
worker 2 · milestone 3 merged, commit 0123456789ab
worker 1 · milestone 2 did not merge: conflict in a.go, b.go; undone
worker 1 · milestone 2 did not merge: go test ./... failed on the merged tree; undone
worker 1 · milestone 2 returned to a worker (1)
`},
	}
	for _, tt := range tests {
		var b strings.Builder
		tr := NewTranscript(&b, st, dir, tt.tick)
		require.NoError(t, state.ScanTimeline(path, func(ev state.Event) error {
			tr.Event(ev)
			return tr.Err()
		}))
		assert.Equal(t, tt.want, b.String(), "tick %d", tt.tick)
	}
}

// A plain-text agent's output is what it did: its transcript shows the end
// of each call's log, made visible and bounded, once the call has ended.
// An agent with a stream of events has its activities shown instead.
func TestTranscriptShowsPlainTextOutput(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "tick-0001-implement.log"),
		[]byte("hello\r\n\x1b[31mred\x1b[0m\n\n"), 0o644))
	var many strings.Builder
	for i := 1; i <= 10000; i++ {
		many.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "tick-0002-implement.log"), []byte(many.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "tick-0003-implement.log"), []byte(`{"type":"raw event"}`+"\n"), 0o644))
	path := filepath.Join(dir, "timeline.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"seq":1,"ts":"2026-11-21T23:00:18Z","type":"process_ended","tick":1,"phase":"implement","data":{"exit_code":0,"duration_ms":5,"plain_text":true}}
{"seq":2,"ts":"2026-11-21T23:00:19Z","type":"process_ended","tick":2,"phase":"implement","data":{"exit_code":1,"duration_ms":5,"plain_text":true}}
{"seq":3,"ts":"2026-11-21T23:00:20Z","type":"process_ended","tick":3,"phase":"implement","data":{"exit_code":0,"duration_ms":5}}
`), 0o644))
	st := &state.State{RunID: "r1", Milestones: []state.Milestone{{Goal: "one"}}}
	var b strings.Builder
	tr := NewTranscript(&b, st, dir, 0)
	require.NoError(t, state.ScanTimeline(path, func(ev state.Event) error {
		tr.Event(ev)
		return tr.Err()
	}))
	want := `
tick 1 · milestone 1/1 "one" · implement
  agent exited 0 after 5ms
  | hello
  | \x1b[31mred\x1b[0m

tick 2 · milestone 1/1 "one" · implement
  agent exited 1 after 5ms
  | … earlier output not shown: runr logs r1 --tick 2 --raw
`
	for i := 9981; i <= 10000; i++ {
		want += "  | line " + strconv.Itoa(i) + "\n"
	}
	want += `
tick 3 · milestone 1/1 "one" · implement
  agent exited 0 after 5ms
`
	assert.Equal(t, want, b.String())
}

// TestLogEndRefusesAPlantedFIFO: a FIFO in place of a call's log shows no
// output, and reading the transcript never waits for a writer to open it.
func TestLogEndRefusesAPlantedFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tick-0001-implement.log")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	done := make(chan []string, 1)
	go func() {
		lines, _ := logEnd(path, 20)
		done <- lines
	}()
	select {
	case lines := <-done:
		assert.Empty(t, lines)
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO in the log's place blocked")
	}
}

// A verify that passed without testing the change shows the figure and
// the lines not run, file names made visible, or that no test ran.
func TestTranscriptShowsUntestedVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "timeline.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"seq":1,"ts":"2026-11-21T23:00:18Z","type":"untested","tick":2,"phase":"verify","data":{"kind":"coverage","covered":0.375,"min_changed":0.8,"uncovered":[{"file":"calc/twice.go","lines":"8-12"},{"file":"evil\u001b[2J.go","lines":"1"}],"uncovered_more":3,"executable":8,"run":3}}
{"seq":2,"ts":"2026-11-21T23:00:19Z","type":"untested","tick":4,"phase":"verify","data":{"kind":"no_tests"}}
`), 0o644))
	st := &state.State{Milestones: []state.Milestone{{Goal: "one"}}}
	var b strings.Builder
	tr := NewTranscript(&b, st, dir, 0)
	require.NoError(t, state.ScanTimeline(path, func(ev state.Event) error {
		tr.Event(ev)
		return tr.Err()
	}))
	assert.Equal(t, `
tick 2 · milestone 1/1 "one" · verify
  verify passed but ran 3 of 8 changed executable lines (37.5%, verify.coverage.min_changed 80%)
  not run: calc/twice.go lines 8-12
  not run: evil\x1b[2J.go lines 1
  not run: 3 more files

tick 4 · milestone 1/1 "one" · verify
  verify passed but ran no test (verify.require_tests)
`, b.String())
}
