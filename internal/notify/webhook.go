package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// firstBackoff is the wait after the first failed POST; each next wait is
// twice the last, and none outlasts notify.timeout.
const firstBackoff = 200 * time.Millisecond

// message is the webhook's request: its body and the headers beside it.
type message struct {
	contentType string
	body        []byte
	header      map[string]string
}

// post sends the event to the webhook, retrying a failed send (no answer,
// 429 or 5xx) with backoff until notify.timeout has passed. Errors never
// show the URL: it may carry a token.
func (n *Notifier) post(ctx context.Context, ev Event) error {
	name := n.cfg.WebhookURLEnv
	raw := lookupEnv(n.environ, name)
	if raw == "" {
		return fmt.Errorf("notify webhook: $%s (notify.webhook_url_env) is not set", name)
	}
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("notify webhook: $%s is not an http(s) URL", name)
	}
	msg := n.message(ev)
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	wait := firstBackoff
	for attempt := 1; ; attempt++ {
		retry, err := n.postOnce(ctx, raw, msg)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("notify webhook ($%s, %s): %w", name, n.cfg.Format, err)
		if !retry {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; gave up after %d attempts within notify.timeout %s", err, attempt, config.FormatDuration(n.cfg.Timeout))
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// postOnce sends one request; retry says whether another might succeed.
func (n *Notifier) postOnce(ctx context.Context, target string, msg message) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(msg.body))
	if err != nil {
		return false, errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", msg.contentType)
	req.Header.Set("User-Agent", "runr")
	for k, v := range msg.header {
		req.Header.Set(k, v)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		// *url.Error names the URL; keep only what went wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return true, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	retry = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	return retry, fmt.Errorf("the server answered %s", resp.Status)
}

// message builds the body notify.format asks for.
func (n *Notifier) message(ev Event) message {
	switch n.cfg.Format {
	case config.NotifySlack:
		return jsonMessage(map[string]string{"text": summary(ev)})
	case config.NotifyDiscord:
		return jsonMessage(map[string]string{"content": summary(ev)})
	case config.NotifyNtfy:
		return message{contentType: "text/plain; charset=utf-8", body: []byte(summary(ev)), header: ntfyHeaders(ev)}
	}
	if ev.Stop == nil {
		return message{contentType: "application/json", body: milestoneJSON(ev)}
	}
	return message{contentType: "application/json", body: ev.StopJSON}
}

func jsonMessage(v any) message {
	data, _ := json.Marshal(v)
	return message{contentType: "application/json", body: data}
}

// summary is the event in one or two lines, for a chat.
func summary(ev Event) string {
	if ev.Stop == nil {
		return fmt.Sprintf("runr %s: milestone %d approved: %s", ev.RunID, ev.Milestone, termtext.Visible(ev.Goal))
	}
	s := fmt.Sprintf("runr %s stopped: %s (exit %d)", ev.RunID, ev.Stop.Code, ev.ExitCode)
	if msg := strings.TrimSpace(termtext.Visible(ev.Stop.Message)); msg != "" {
		s += "\n" + msg
	}
	return s
}

// ntfyHeaders are ntfy's Title, Priority and Tags for the event.
func ntfyHeaders(ev Event) map[string]string {
	switch {
	case ev.Stop == nil:
		return map[string]string{"Title": "runr " + ev.RunID + ": milestone approved", "Priority": "low", "Tags": "heavy_check_mark"}
	case ev.Stop.Code == stopreasons.Complete:
		return map[string]string{"Title": "runr " + ev.RunID + ": complete", "Priority": "default", "Tags": "white_check_mark"}
	}
	return map[string]string{"Title": "runr " + ev.RunID + ": " + string(ev.Stop.Code), "Priority": "high", "Tags": "warning"}
}

// lookupEnv returns the value of name in environ, the last one winning as
// in the process environment.
func lookupEnv(environ []string, name string) string {
	value := ""
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			value = v
		}
	}
	return value
}
