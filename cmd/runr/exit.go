package main

import (
	"errors"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// stopError reports a run that stopped with a reason whose summary was
// already printed: it carries only the exit code's reason.
type stopError struct{ code stopreasons.Code }

func (e *stopError) Error() string { return "run stopped: " + string(e.code) }

// exitCode is the one place where an error or a stop becomes a process exit
// code; every code comes from the registry.
func exitCode(err error) int {
	if err == nil {
		return stopreasons.ExitCode(stopreasons.Complete)
	}
	var se *stopError
	if errors.As(err, &se) {
		return stopreasons.ExitCode(se.code)
	}
	return stopreasons.ExitCode(stopreasons.CodeOf(err))
}

// usageErr marks an error from argument parsing as usage_error.
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	var se *stopreasons.Error
	if errors.As(err, &se) {
		return err
	}
	return &stopreasons.Error{Code: stopreasons.UsageError, Err: err}
}
