package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hook is a local webhook server that records every request it gets.
type hook struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []hookRequest
	hold chan struct{} // when set, the handler answers only once it is closed
}

type hookRequest struct {
	method string
	header http.Header
	body   string
}

func newHook(t *testing.T, slow bool) *hook {
	h := &hook{}
	if slow {
		h.hold = make(chan struct{})
	}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, hookRequest{r.Method, r.Header.Clone(), string(b)})
		h.mu.Unlock()
		if h.hold != nil {
			select {
			case <-h.hold:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		if h.hold != nil {
			close(h.hold)
		}
		h.srv.Close()
	})
	return h
}

func (h *hook) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// runrNotified runs runr with extra environment and returns its exit code
// and stderr. The deadline is the test's own bound on how long a stop may
// take to be told: far above notify.timeout, so it never decides a pass.
func runrNotified(t *testing.T, repo string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "runr"), args...)
	cmd.Dir = repo
	cmd.Env = append(testEnv(repo), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "runr did not exit before the test's deadline; stderr: %s", stderr.String())
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stderr.String()
}

// A run that stops on max_ticks (125): a failure.
var maxTicksRun = []string{"run", "--max-ticks", "1", "--prompt", "work", "--verify", "true", "--", "fakeagent", "--do", "write a.txt 1"}

// Each format's body reaches the webhook in one POST per stop.
func TestNotifyWebhookFormats(t *testing.T) {
	for _, format := range []string{"json", "slack", "discord", "ntfy"} {
		t.Run(format, func(t *testing.T) {
			h := newHook(t, false)
			repo := newRepo(t)
			code, stderr := runrNotified(t, repo, []string{"HOOK_URL=" + h.srv.URL + "/hook", "RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL", "RUNR_NOTIFY_FORMAT=" + format}, maxTicksRun...)
			require.Equal(t, 125, code, "stderr: %s", stderr)
			assert.NotContains(t, stderr, "notify")
			got := h.requests()
			require.Len(t, got, 1, "one POST per stop")
			r := got[0]
			assert.Equal(t, http.MethodPost, r.method)
			runDir, err := latestRunDir(repo)
			require.NoError(t, err)
			id := filepath.Base(runDir)
			switch format {
			case "json":
				stopJSON, err := os.ReadFile(filepath.Join(runDir, "stop.json"))
				require.NoError(t, err)
				assert.Equal(t, string(stopJSON), r.body, "the body is stop.json")
				assert.Equal(t, "application/json", r.header.Get("Content-Type"))
			case "slack", "discord":
				field := map[string]string{"slack": "text", "discord": "content"}[format]
				var v map[string]string
				require.NoError(t, json.Unmarshal([]byte(r.body), &v), r.body)
				require.Len(t, v, 1)
				assert.Contains(t, v[field], "runr "+id+" stopped: max_ticks (exit 125)")
			case "ntfy":
				assert.Contains(t, r.body, "runr "+id+" stopped: max_ticks (exit 125)")
				assert.Equal(t, "runr "+id+": max_ticks", r.header.Get("Title"))
				assert.Equal(t, "high", r.header.Get("Priority"))
				assert.Equal(t, "warning", r.header.Get("Tags"))
			}
		})
	}
}

// notify.on picks the stops that are told.
func TestNotifyOnFilters(t *testing.T) {
	complete := []string{"run", "--max-ticks", "20", "--prompt", "work", "--verify", "true", "--", "fakeagent", "--do", "write a.txt 1\npromise"}
	tests := []struct {
		on    string
		args  []string
		code  int
		posts int
	}{
		{`["success"]`, maxTicksRun, 125, 0},
		{`["failure"]`, maxTicksRun, 125, 1},
		{`["success"]`, complete, 0, 1},
		{`["failure"]`, complete, 0, 0},
		{`["stop"]`, complete, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.on+" "+tt.args[2], func(t *testing.T) {
			h := newHook(t, false)
			code, stderr := runrNotified(t, newRepo(t), []string{"HOOK_URL=" + h.srv.URL, "RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL", "RUNR_NOTIFY_ON=" + tt.on}, tt.args...)
			require.Equal(t, tt.code, code, "stderr: %s", stderr)
			assert.Len(t, h.requests(), tt.posts)
		})
	}
}

// A webhook that is down or too slow is a warning: runr exits with the
// stop's own code, without waiting past notify.timeout.
func TestNotifyUnreachableWebhookKeepsTheExitCode(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		url := "http://" + l.Addr().String() + "/hook"
		require.NoError(t, l.Close())
		code, stderr := runrNotified(t, newRepo(t), []string{"HOOK_URL=" + url, "RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL", "RUNR_NOTIFY_TIMEOUT=1s"}, maxTicksRun...)
		assert.Equal(t, 125, code)
		assert.Contains(t, stderr, "runr: warning: notify webhook ($HOOK_URL, json):")
		assert.Contains(t, stderr, "gave up after")
		assert.NotContains(t, stderr, url, "the URL is never printed")
	})
	t.Run("slow", func(t *testing.T) {
		h := newHook(t, true)
		code, stderr := runrNotified(t, newRepo(t), []string{"HOOK_URL=" + h.srv.URL, "RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL", "RUNR_NOTIFY_TIMEOUT=1s"}, maxTicksRun...)
		assert.Equal(t, 125, code)
		assert.Contains(t, stderr, "runr: warning: notify webhook ($HOOK_URL, json):")
		assert.NotEmpty(t, h.requests(), "the server got the request")
	})
	t.Run("unset variable", func(t *testing.T) {
		code, stderr := runrNotified(t, newRepo(t), []string{"RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL"}, maxTicksRun...)
		assert.Equal(t, 125, code)
		assert.Contains(t, stderr, "runr: warning: notify webhook: $HOOK_URL (notify.webhook_url_env) is not set")
	})
}

// notify.command gets the stop in its environment and stop.json on stdin;
// a failing command is a warning and leaves the exit code alone.
func TestNotifyCommand(t *testing.T) {
	repo := newRepo(t)
	out := filepath.Join(t.TempDir(), "told")
	script := filepath.Join(t.TempDir(), "notify.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
{
  echo "id=$RUNR_RUN_ID"
  echo "reason=$RUNR_STOP_REASON"
  echo "exit=$RUNR_EXIT_CODE"
  echo "dir=$RUNR_RUN_DIR"
  echo "stdin:"
  cat
} > "$NOTIFY_OUT"
exit "${NOTIFY_EXIT:-0}"
`), 0o755))
	cmdEnv := `RUNR_NOTIFY_COMMAND=["` + script + `"]`

	code, stderr := runrNotified(t, repo, []string{cmdEnv, "NOTIFY_OUT=" + out}, maxTicksRun...)
	require.Equal(t, 125, code, "stderr: %s", stderr)
	assert.NotContains(t, stderr, "notify")
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	stopJSON, err := os.ReadFile(filepath.Join(runDir, "stop.json"))
	require.NoError(t, err)
	told, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "id="+filepath.Base(runDir)+"\nreason=max_ticks\nexit=125\ndir="+runDir+"\nstdin:\n"+string(stopJSON), string(told))

	code, stderr = runrNotified(t, newRepo(t), []string{cmdEnv, "NOTIFY_OUT=" + out, "NOTIFY_EXIT=3"}, maxTicksRun...)
	assert.Equal(t, 125, code)
	assert.Contains(t, stderr, "runr: warning: notify.command "+script+": exit 3")
}

// The webhook's URL is read from the environment when a stop is told and is
// written to no file of the run; config.json names only the variable.
func TestNotifyWebhookURLIsNeverStored(t *testing.T) {
	h := newHook(t, false)
	url := h.srv.URL + "/services/T000/B000/very-secret-token"
	repo := newRepo(t)
	code, stderr := runrNotified(t, repo, []string{"HOOK_URL=" + url, "RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL"}, maxTicksRun...)
	require.Equal(t, 125, code, "stderr: %s", stderr)
	require.Len(t, h.requests(), 1)
	runDir, err := latestRunDir(repo)
	require.NoError(t, err)
	config, err := os.ReadFile(filepath.Join(runDir, "config.json"))
	require.NoError(t, err)
	assert.Contains(t, string(config), `"webhook_url_env": "HOOK_URL"`)
	files := 0
	require.NoError(t, filepath.WalkDir(filepath.Dir(filepath.Dir(runDir)), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		assert.NotContains(t, string(b), "very-secret-token", "%s holds the webhook URL", path)
		return nil
	}))
	assert.Greater(t, files, 3)
	assert.False(t, strings.Contains(stderr, "very-secret-token"))
}

// notify.on milestone tells each approved milestone as it is approved, and
// not the stop.
func TestNotifyMilestone(t *testing.T) {
	h := newHook(t, false)
	complete := []string{"run", "--max-ticks", "20", "--prompt", "work", "--verify", "true", "--", "fakeagent", "--do", "write a.txt 1\npromise"}
	code, stderr := runrNotified(t, newRepo(t), []string{"HOOK_URL=" + h.srv.URL, "RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL", `RUNR_NOTIFY_ON=["milestone"]`}, complete...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	got := h.requests()
	require.Len(t, got, 1, "one approved milestone, no stop")
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(got[0].body), &v), got[0].body)
	assert.Equal(t, "milestone_approved", v["event"])
	assert.Equal(t, float64(1), v["milestone"])
	assert.NotEmpty(t, v["run_id"])
}

// With --auto-resume every stop is told: the transient one the run goes on
// after, and the last.
func TestNotifyEveryStopOfAnAutoResumedRun(t *testing.T) {
	h := newHook(t, false)
	repo := newRepo(t)
	// The first call stalls after a second; the run resumes a second later.
	cfg := "agent:\n  idle_timeout: 1s\n  kill_grace: 1s\nresume:\n  backoff: [1s]\n  max_auto_resumes: 2\n"
	cfgPath := filepath.Join(t.TempDir(), "runr.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	code, stderr := runrNotified(t, repo, []string{"HOOK_URL=" + h.srv.URL + "/hook", "RUNR_NOTIFY_WEBHOOK_URL_ENV=HOOK_URL", "RUNR_NOTIFY_FORMAT=slack"},
		"--config", cfgPath, "run", "--auto-resume", "--prompt", "work", "--", "fakeagent", "--do", "#1: hang", "--do", "status done")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	got := h.requests()
	require.Len(t, got, 2, "one POST per stop")
	assert.Contains(t, got[0].body, "stopped: stalled")
	assert.Contains(t, got[1].body, "stopped: complete")
}
