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

// ConditionSignal is the condition of a stop that a signal caused.
const ConditionSignal = "signal"

// SignalStop is the stop a signal ends a run with: ForSignal's code, the
// signal's name as its message.
func SignalStop(sig os.Signal) Stop {
	code, name := ForSignal(sig)
	return Stop{Code: code, Condition: ConditionSignal, Message: name}
}
