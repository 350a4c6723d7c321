package main

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSignalNoticeSaysWhatHappensNext(t *testing.T) {
	io, _, errb := testStreams()
	say := signalNotice(newLiveLine(io, true), 5*time.Second)
	say(syscall.SIGTERM)
	say(syscall.SIGTERM)
	assert.Equal(t, "runr: SIGTERM: stopping the run; the agent's process group is asked to stop and gets 5s (agent.kill_grace) to exit\n", errb.String(),
		"once, with --quiet too; only Ctrl+C can hurry it")
	errb.Reset()
	say(os.Interrupt)
	say(os.Interrupt)
	assert.Equal(t, "runr: Ctrl+C again: stopping the agent's process group now (SIGKILL)\n", errb.String())

	io, _, errb = testStreams()
	say = signalNotice(newLiveLine(io, false), 0)
	say(os.Interrupt)
	assert.Equal(t, "runr: Ctrl+C: stopping the run; the agent's process group is asked to stop and gets agent.kill_grace to exit; Ctrl+C again stops it now\n", errb.String())
}

// On a terminal the notice gets a line of its own and the live line is
// drawn again below it.
func TestSignalNoticeKeepsTheLiveLine(t *testing.T) {
	io, _, errb := testStreams()
	io.ErrTTY, io.NoColor = true, true
	live := &liveLine{io: io, stopc: make(chan struct{})}
	live.drawn = 1
	live.last.Tick, live.last.Phase, live.last.Milestone, live.last.Milestones = 3, "verify", 1, 2
	live.note("runr: hello")
	assert.Equal(t, "\r\x1b[Krunr: hello\n\r\x1b[Ktick 3 · verify · milestone 1/2 · 0s", errb.String())
}
