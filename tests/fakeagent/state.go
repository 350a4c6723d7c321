package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// countCall records this call in the call-count file and returns its number,
// 1 for the first call. The file is FAKEAGENT_STATE, else fakeagent-calls in
// RUNR_RUN_DIR; without either nothing is recorded and every call is the first.
func countCall(c call) (int, error) {
	path := os.Getenv("FAKEAGENT_STATE")
	if path == "" {
		dir := os.Getenv("RUNR_RUN_DIR")
		if dir == "" {
			return 1, nil
		}
		path = filepath.Join(dir, "fakeagent-calls")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open the call-count file: %w", err)
	}
	defer f.Close()
	// The lock makes read-count-append one step when calls overlap.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("lock the call-count file %s: %w", path, err)
	}
	n := 1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read the call-count file %s: %w", path, err)
	}
	line := fmt.Sprintf("call=%d iteration=%d milestone=%d pid=%d\n", n, c.iteration, c.milestone, os.Getpid())
	if _, err := f.WriteString(line); err != nil {
		return 0, fmt.Errorf("write the call-count file %s: %w", path, err)
	}
	return n, nil
}
