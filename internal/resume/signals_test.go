package resume

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Signals reach the run in order, each after its notice.
func TestCatchSignalsForwardsAfterTheNotice(t *testing.T) {
	var said []os.Signal
	sigs, stop := catchSignals(func(s os.Signal) { said = append(said, s) })
	defer stop()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	select {
	case s := <-sigs:
		assert.Equal(t, syscall.SIGHUP, s)
		assert.Equal(t, []os.Signal{syscall.SIGHUP}, said, "noticed before it is delivered")
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP was not delivered to the run")
	}
	stop()
	stop() // twice is harmless
}
