package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// signalNotice says on stderr, as a signal arrives, what runr does next
// (DESIGN §7): the first signal stops the run, and the process group
// running now gets kill_grace to exit; a later Ctrl+C kills it at once.
// grace is agent.kill_grace, 0 when unknown. It is printed even with
// --quiet: it answers a key the user pressed.
func signalNotice(live *liveLine, grace time.Duration) func(os.Signal) {
	var mu sync.Mutex
	stopping, killing := false, false
	within := "agent.kill_grace"
	if grace > 0 {
		within = stopreasons.TrimDuration(grace) + " (agent.kill_grace)"
	}
	return func(sig os.Signal) {
		mu.Lock()
		defer mu.Unlock()
		name := "Ctrl+C"
		if sig != os.Interrupt {
			_, name = stopreasons.ForSignal(sig)
		}
		switch {
		case !stopping:
			stopping = true
			msg := fmt.Sprintf("runr: %s: stopping the run; the agent's process group is asked to stop and gets %s to exit", name, within)
			if sig == os.Interrupt {
				msg += "; Ctrl+C again stops it now"
			}
			live.note(msg)
		case sig == os.Interrupt && !killing:
			killing = true
			live.note("runr: Ctrl+C again: stopping the agent's process group now (SIGKILL)")
		}
	}
}

// note prints a line of its own on stderr, above the live line when one
// is drawn, whatever --quiet says.
func (l *liveLine) note(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	drawn := l.drawn > 0
	l.clear()
	fmt.Fprintln(l.io.Err, s)
	if drawn {
		l.draw()
	}
}
