package resume

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// catchSignals delivers SIGINT, SIGTERM and SIGHUP to the run instead of
// ending runr, so that the run stops cleanly and records why; stop undoes
// it. say, unless nil, is told of each signal before the run gets it, so
// that what happens next is printed at once.
func catchSignals(say func(os.Signal)) (sigs <-chan os.Signal, stop func()) {
	in := make(chan os.Signal, 4)
	out := make(chan os.Signal, 4)
	done := make(chan struct{})
	signal.Notify(in, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-in:
				if say != nil {
					say(sig)
				}
				// Signals the run has not taken yet wait here, in order, for
				// whoever reads next (the auto-resume wait).
				select {
				case out <- sig:
				case <-done:
					return
				}
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			signal.Stop(in)
			close(done)
		})
	}
}
