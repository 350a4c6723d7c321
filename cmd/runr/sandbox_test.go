package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/supervisor"
)

// TestSandboxWarningIsSaidEvenQuiet: the sandbox's warnings (the auto
// fallbacks) reach stderr once, --quiet or not, with control characters
// made visible.
func TestSandboxWarningIsSaidEvenQuiet(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		var errOut bytes.Buffer
		l := newLiveLine(&IOStreams{Err: &errOut}, quiet)
		l.update(supervisor.Progress{Msg: supervisor.ProgressWarning{Message: "sandbox: no Landlock\x1b[2J"}})
		l.done()
		assert.Equal(t, "runr: warning: sandbox: no Landlock\\x1b[2J\n", errOut.String(), "quiet=%v", quiet)
	}
}

func TestSandboxLine(t *testing.T) {
	assert.Contains(t, sandboxLine(sandbox.Plan{Decision: sandbox.Decision{Mode: "off"}}), "--sandbox=on")
	assert.Contains(t, sandboxLine(sandbox.Plan{Decision: sandbox.Decision{Mode: "on", Refusal: "no Landlock"}}), "the run would stop: no Landlock")
	assert.Equal(t, "auto: Landlock ABI 7 alone: the existing top-level entries are writable, not the root",
		sandboxLine(sandbox.Plan{Decision: sandbox.Decision{Mode: "auto", Confine: true, TopLevel: true}, ABI: 7}))
	assert.Equal(t, "on: Landlock ABI 7 in a private mount namespace, read-only: /r/.git",
		sandboxLine(sandbox.Plan{Decision: sandbox.Decision{Mode: "on", Confine: true, Namespace: true}, ABI: 7, ReadOnly: []string{"/r/.git"}}))
}
