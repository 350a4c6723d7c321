package proc

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
)

// DefaultProbeTimeout bounds a Probe whose spec sets no timeout.
const DefaultProbeTimeout = 5 * time.Second

// A probe is a question, not work to save: what is left of it after the
// timeout gets little time before SIGKILL.
const probeKillGrace = time.Second

// probeKeep is how much of a probe's stdout is kept; its first line is all
// that is wanted.
const probeKeep = 16 << 10

// Probe runs a short command that answers with a line, such as `<agent>
// --version`, and returns the first non-empty line of its stdout (of its
// stderr when stdout has none). Timeout defaults to DefaultProbeTimeout and
// KillGrace to one second, so a program that never answers, or leaves a child
// holding its output open, costs about their sum and no more. A program that
// cannot be run, a timeout and a non-zero exit are errors.
func Probe(ctx context.Context, spec Spec) (string, error) {
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultProbeTimeout
	}
	if spec.KillGrace <= 0 {
		spec.KillGrace = probeKillGrace
	}
	if spec.TailBytes <= 0 {
		spec.TailBytes = 4 << 10
	}
	out := &headBuffer{max: probeKeep}
	spec.Stdout = out
	res, err := Run(ctx, spec)
	if err != nil {
		return "", err
	}
	switch {
	case res.TimedOut:
		return "", fmt.Errorf("timed out after %s", spec.Timeout)
	case res.Canceled:
		return "", fmt.Errorf("stopped: %w", context.Cause(ctx))
	case res.Signal != "":
		return "", fmt.Errorf("ended by signal %s%s", res.Signal, withLine(res.Tail))
	case res.ExitCode != 0:
		return "", fmt.Errorf("exit status %d%s", res.ExitCode, withLine(res.Tail))
	}
	if line := firstLine(out.buf.Bytes()); line != "" {
		return line, nil
	}
	return firstLine(res.Tail), nil
}

func withLine(b []byte) string {
	if line := firstLine(b); line != "" {
		return ": " + line
	}
	return ""
}

// firstLine is the first non-empty line of b, trimmed.
func firstLine(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return strings.ToValidUTF8(line, "\uFFFD")
		}
	}
	return ""
}

// headBuffer keeps the first max bytes written to it and drops the rest
// without failing, so the writer goes on draining the pipe.
type headBuffer struct {
	buf bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
