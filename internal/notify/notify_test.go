package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func stopEvent(code stopreasons.Code) Event {
	return Event{RunID: "r1", Stop: &stopreasons.Stop{Code: code, Message: "why"}, ExitCode: stopreasons.ExitCode(code), StopJSON: []byte(`{"code":"` + string(code) + `"}`)}
}

// notify.on picks the events: every stop, failures, successes, milestones.
func TestWants(t *testing.T) {
	milestone := Event{RunID: "r1", Milestone: 2, Goal: "g"}
	for _, tc := range []struct {
		on                             []string
		complete, failure, milestoneIn bool
	}{
		{[]string{config.NotifyOnStop}, true, true, false},
		{[]string{config.NotifyOnFailure}, false, true, false},
		{[]string{config.NotifyOnSuccess}, true, false, false},
		{[]string{config.NotifyOnMilestone}, false, false, true},
		{[]string{config.NotifyOnSuccess, config.NotifyOnMilestone}, true, false, true},
	} {
		n := New(config.Notify{On: tc.on, WebhookURLEnv: "X"}, nil, "")
		assert.Equal(t, tc.complete, n.Wants(stopEvent(stopreasons.Complete)), "on %v: complete", tc.on)
		assert.Equal(t, tc.failure, n.Wants(stopEvent(stopreasons.MaxTicks)), "on %v: max_ticks", tc.on)
		assert.Equal(t, tc.milestoneIn, n.Wants(milestone), "on %v: milestone", tc.on)
	}
}

// A 5xx or 429 is tried again with backoff; another 4xx is not.
func TestWebhookRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int
		wantErr  bool
		calls    int32
	}{
		{"503 then 429 then ok", []int{503, 429, 204}, false, 3},
		{"400 is final", []int{400, 204}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := calls.Add(1) - 1
				w.WriteHeader(tc.statuses[min(int(i), len(tc.statuses)-1)])
			}))
			defer srv.Close()
			n := New(config.Notify{WebhookURLEnv: "HOOK", Format: config.NotifyJSON, On: []string{config.NotifyOnStop}, Timeout: 10 * time.Second},
				[]string{"HOOK=" + srv.URL}, "")
			err := n.Send(context.Background(), stopEvent(stopreasons.MaxTicks))
			assert.Equal(t, tc.wantErr, err != nil, "error: %v", err)
			assert.Equal(t, tc.calls, calls.Load())
		})
	}
}

// An error never shows the URL: it may carry a token.
func TestWebhookErrorsHideTheURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/hooks/secret-token-123"
	srv.Close() // nothing listens there now
	n := New(config.Notify{WebhookURLEnv: "HOOK", Format: config.NotifySlack, On: []string{config.NotifyOnStop}, Timeout: 500 * time.Millisecond},
		[]string{"HOOK=" + url}, "")
	err := n.Send(context.Background(), stopEvent(stopreasons.MaxTicks))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret-token-123")
	assert.Contains(t, err.Error(), "$HOOK")

	n = New(config.Notify{WebhookURLEnv: "HOOK", Format: config.NotifySlack, On: []string{config.NotifyOnStop}, Timeout: time.Second},
		[]string{"HOOK=ftp://example.com/secret-token-123"}, "")
	err = n.Send(context.Background(), stopEvent(stopreasons.MaxTicks))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret-token-123")
}
