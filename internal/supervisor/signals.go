package supervisor

import (
	"context"
	"errors"
	"os"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// signalStop is the first signal the run received: the stop it maps to
// (stopreasons.ForSignal) and its name.
type signalStop struct {
	code stopreasons.Code
	name string
}

// stop is the run's stop on the signal.
func (sig *signalStop) stop() *stop {
	return &stop{Stop: stopreasons.Stop{Code: sig.code, Condition: stopreasons.ConditionSignal, Message: sig.name}}
}

// watchSignals turns the first signal into a stop of the run and a second
// SIGINT into an immediate kill of the running process group. The returned
// function ends the watch and returns once the watcher takes no more
// signals.
func (s *Supervisor) watchSignals(cancel context.CancelCauseFunc) func() {
	if s.o.Signals == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case sig := <-s.o.Signals:
				s.mu.Lock()
				first := s.sigReason == nil
				if first {
					code, name := stopreasons.ForSignal(sig)
					s.sigReason = &signalStop{code: code, name: name}
				}
				s.mu.Unlock()
				if first {
					cancel(errSignal)
				} else if sig == os.Interrupt {
					select {
					case <-s.killNow:
					default:
						close(s.killNow)
					}
				}
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

var errSignal = errors.New("signal received")

func (s *Supervisor) signalled() *signalStop {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sigReason
}
