package stopreasons

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestForSignal(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		code Code
		name string
	}{
		{os.Interrupt, UserStopped, "SIGINT"},
		{syscall.SIGTERM, Terminated, "SIGTERM"},
		{syscall.SIGHUP, Terminated, "SIGHUP"},
		{syscall.SIGQUIT, Terminated, "quit"},
	} {
		code, name := ForSignal(tc.sig)
		assert.Equal(t, tc.code, code, "%v", tc.sig)
		assert.Equal(t, tc.name, name, "%v", tc.sig)
		assert.Equal(t, ExitCode(code), map[Code]int{UserStopped: 130, Terminated: 143}[code])
	}
}

func TestSignalStop(t *testing.T) {
	assert.Equal(t, Stop{Code: UserStopped, Condition: "signal", Message: "SIGINT"}, SignalStop(os.Interrupt))
	assert.Equal(t, Stop{Code: Terminated, Condition: "signal", Message: "SIGTERM"}, SignalStop(syscall.SIGTERM))
}
