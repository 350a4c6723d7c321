package testenv

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// WaitLimit bounds every wait, so that a behaviour that never comes fails
// the test instead of hanging it; it is generous for a busy machine, and a
// wait that succeeds ends as soon as its condition holds.
const WaitLimit = 30 * time.Second

const pollEvery = 10 * time.Millisecond

// Poll calls cond every few milliseconds until it holds or limit has
// passed, and reports whether it held.
func Poll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// WaitFor polls cond until it holds; after WaitLimit it fails t, naming what
// was awaited ("the agent's ready line"). cond runs on the test's goroutine,
// so it may itself fail t, e.g. when the awaited process has exited.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, WaitLimit, what, cond)
}

func waitWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(limit, cond) {
		t.Fatalf("gave up after %s waiting for %s", limit, what)
	}
}

// WaitForLine waits until file has a line starting with prefix and returns
// that line (the first such).
func WaitForLine(t testing.TB, file, prefix string) string {
	t.Helper()
	var line string
	WaitFor(t, fmt.Sprintf("a line %q in %s", prefix, file), func() bool {
		var ok bool
		line, ok = LineWithPrefix(file, prefix)
		return ok
	})
	return line
}

// LineWithPrefix returns the first line of file that starts with prefix.
func LineWithPrefix(file, prefix string) (string, bool) {
	data, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line, true
		}
	}
	return "", false
}

// FileContains is the condition that file exists and contains sub.
func FileContains(file, sub string) func() bool {
	return func() bool {
		b, err := os.ReadFile(file)
		return err == nil && bytes.Contains(b, []byte(sub))
	}
}

// FileCount is how often sub occurs in file (0 when it is missing).
func FileCount(file, sub string) int {
	b, _ := os.ReadFile(file)
	return bytes.Count(b, []byte(sub))
}
