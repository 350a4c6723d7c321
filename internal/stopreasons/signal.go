package stopreasons

import (
	"os"
	"syscall"
)

// ForSignal is the stop a signal ends a run with, and the signal's name as
// runr records and prints it: SIGINT is user_stopped, SIGTERM and SIGHUP
// (and any other signal runr is asked to stop on) terminated.
func ForSignal(sig os.Signal) (Code, string) {
	switch sig {
	case os.Interrupt:
		return UserStopped, "SIGINT"
	case syscall.SIGTERM:
		return Terminated, "SIGTERM"
	case syscall.SIGHUP:
		return Terminated, "SIGHUP"
	}
	return Terminated, sig.String()
}
