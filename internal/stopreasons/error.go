package stopreasons

import (
	"errors"
	"fmt"
)

// Error is an error that carries its stop reason, so that the top of runr can
// turn it into the registry's exit code with errors.As.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return string(e.Code)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an error with reason code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns err with reason code and a message for context; nil stays nil.
func Wrap(code Code, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// CodeOf finds the reason an error carries; an error without one is
// internal_error, nil is complete.
func CodeOf(err error) Code {
	if err == nil {
		return Complete
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return InternalError
}
