package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/notify"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/supervisor"
	"github.com/runr-dev/runr/internal/termtext"
)

// notifyStop sends the stop of st to notify.command and the webhook. It
// returns within notify.timeout (and the command's kill grace); a failure
// is a warning on stderr and never changes the exit code.
func notifyStop(io *IOStreams, store *state.Store, st *state.State, cfg *config.Config) {
	if cfg == nil {
		return
	}
	n := notify.New(cfg.Notify, io.Environ, "")
	if !n.Enabled() {
		return
	}
	ev, err := notify.StopEvent(store, st)
	if err == nil {
		err = n.Send(context.Background(), ev)
	}
	if err == nil {
		return
	}
	// errors.Join puts one failure on each line.
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(io.Err, "runr: warning: %s\n", termtext.Visible(line))
	}
}

// milestoneNotifier is the supervisor's hook for notify.on milestone; nil
// when nothing would be sent.
func milestoneNotifier(io *IOStreams, cfg *config.Config) supervisor.MilestoneNotifier {
	if cfg == nil {
		return nil
	}
	n := notify.New(cfg.Notify, io.Environ, "")
	if !n.Enabled() || !slices.Contains(cfg.Notify.On, config.NotifyOnMilestone) {
		return nil
	}
	return n
}
