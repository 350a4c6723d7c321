// Package notify tells someone that a run stopped or approved a milestone:
// it runs notify.command through worker and POSTs to the webhook whose URL
// the variable named by notify.webhook_url_env holds. Each is bounded by
// notify.timeout; a failure is returned for the caller to log and never
// decides how runr exits.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// killGrace is how long the notify command has between SIGTERM and SIGKILL
// once its timeout has passed: short, since runr's exit waits for it.
const killGrace = time.Second

// Event is one thing to tell: a stop, or an approved milestone.
type Event struct {
	RunID  string
	RunDir string
	// A stop: its reason, its exit code and stop.json as written.
	Stop     *stopreasons.Stop
	ExitCode int
	StopJSON []byte
	// An approved milestone (Stop is nil): its 1-based number and goal.
	Milestone int
	Goal      string
}

// Notifier sends the events notify.on selects.
type Notifier struct {
	cfg     config.Notify
	environ []string
	dir     string
	client  *http.Client
}

// New returns a notifier for cfg. environ is runr's environment: the
// command gets it, and the webhook's URL is read from it when an event is
// sent. dir is where the command runs.
func New(cfg config.Notify, environ []string, dir string) *Notifier {
	return &Notifier{cfg: cfg, environ: environ, dir: dir, client: &http.Client{}}
}

// Enabled reports whether there is anything to send to.
func (n *Notifier) Enabled() bool {
	return len(n.cfg.Command) > 0 || n.cfg.WebhookURLEnv != ""
}

// MilestoneApproved sends an approved milestone when notify.on lists
// milestone; the supervisor calls it where it records milestone_approved.
func (n *Notifier) MilestoneApproved(runID, runDir string, milestone int, goal string) error {
	return n.Send(context.Background(), Event{RunID: runID, RunDir: runDir, Milestone: milestone, Goal: goal})
}

// StopEvent is the event of run st's stop, with stop.json read from the
// store (or written from the state when the file is missing).
func StopEvent(store *state.Store, st *state.State) (Event, error) {
	if st == nil || st.StopReason == nil {
		return Event{}, errors.New("the run has no stop reason")
	}
	stop := st.StopReason.Stop
	ev := Event{RunID: st.RunID, RunDir: store.RunDir(st.RunID), Stop: &stop, ExitCode: st.StopReason.ExitCode}
	data, err := store.ReadRunFile(st.RunID, "stop.json")
	if err != nil {
		if data, err = json.MarshalIndent(st.StopReason, "", "  "); err != nil {
			return Event{}, err
		}
	}
	ev.StopJSON = data
	return ev, nil
}

// Wants reports whether notify.on selects the event.
func (n *Notifier) Wants(ev Event) bool {
	on := n.cfg.On
	if ev.Stop == nil {
		return slices.Contains(on, config.NotifyOnMilestone)
	}
	success := ev.Stop.Code == stopreasons.Complete
	return slices.Contains(on, config.NotifyOnStop) ||
		(success && slices.Contains(on, config.NotifyOnSuccess)) ||
		(!success && slices.Contains(on, config.NotifyOnFailure))
}

// Send runs the command and posts to the webhook at once, when notify.on
// selects the event, and returns when both are done: within notify.timeout
// (and the command's kill grace). The error joins what failed.
func (n *Notifier) Send(ctx context.Context, ev Event) error {
	if !n.Enabled() || !n.Wants(ev) {
		return nil
	}
	var (
		wg           sync.WaitGroup
		cmdErr, hook error
	)
	if len(n.cfg.Command) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmdErr = n.runCommand(ctx, ev)
		}()
	}
	if n.cfg.WebhookURLEnv != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hook = n.post(ctx, ev)
		}()
	}
	wg.Wait()
	return errors.Join(cmdErr, hook)
}

// runCommand runs notify.command with the event in its environment and
// its JSON on stdin.
func (n *Notifier) runCommand(ctx context.Context, ev Event) error {
	env := append(slices.Clip(n.environ), "RUNR_RUN_ID="+ev.RunID, "RUNR_RUN_DIR="+ev.RunDir)
	stdin := ev.StopJSON
	if ev.Stop != nil {
		env = append(env, "RUNR_STOP_REASON="+string(ev.Stop.Code), "RUNR_EXIT_CODE="+strconv.Itoa(ev.ExitCode))
	} else {
		env = append(env, "RUNR_MILESTONE="+strconv.Itoa(ev.Milestone), "RUNR_MILESTONE_GOAL="+ev.Goal)
		stdin = milestoneJSON(ev)
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:      n.cfg.Command,
		Dir:       n.dir,
		Env:       env,
		Stdin:     bytes.NewReader(stdin),
		Timeout:   n.cfg.Timeout,
		KillGrace: killGrace,
		TailBytes: 2048,
	})
	switch {
	case err != nil:
		return fmt.Errorf("notify.command: %w", err)
	case res.TimedOut:
		return fmt.Errorf("notify.command %s: still running after notify.timeout %s; stopped", n.cfg.Command[0], config.FormatDuration(n.cfg.Timeout))
	case res.ExitCode != 0:
		return fmt.Errorf("notify.command %s: exit %s: %s", n.cfg.Command[0], exitText(res), termtext.Visible(proc.Tail(res.Tail, 200)))
	}
	return nil
}

func exitText(res proc.Result) string {
	if res.Signal != "" {
		return res.Signal
	}
	return strconv.Itoa(res.ExitCode)
}

// milestoneJSON is what the command reads and the json webhook receives
// for an approved milestone.
func milestoneJSON(ev Event) []byte {
	data, _ := json.Marshal(map[string]any{
		"event":     "milestone_approved",
		"run_id":    ev.RunID,
		"milestone": ev.Milestone,
		"goal":      ev.Goal,
	})
	return data
}
