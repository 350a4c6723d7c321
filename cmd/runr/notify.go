package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/notify"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
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
		fmt.Fprintf(io.Err, "runr: warning: %s\n", stopreasons.Visible(line))
	}
}
