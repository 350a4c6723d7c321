package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// TestErrorStop: a failure of the machine is environment_invalid, for a
// parallel run's coordinator as for the supervisor; other errors keep their
// code, and an error without one is internal_error.
func TestErrorStop(t *testing.T) {
	full := &fs.PathError{Op: "write", Path: "state.json", Err: syscall.ENOSPC}
	for _, tc := range []struct {
		err  error
		code stopreasons.Code
	}{
		{fmt.Errorf("save: %w", full), stopreasons.EnvironmentInvalid},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, stopreasons.EnvironmentInvalid},
		{stopreasons.Errorf(stopreasons.StateCorrupt, "state.json: bad"), stopreasons.StateCorrupt},
		{errors.New("a bug"), stopreasons.InternalError},
	} {
		sp := ErrorStop(tc.err)
		assert.Equal(t, tc.code, sp.Code, "%v", tc.err)
		assert.Contains(t, sp.Message, tc.err.Error())
	}
}
