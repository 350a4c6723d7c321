package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// The test binary doubles as the helper process of the crash and lock tests,
// as os/exec's own tests do: with RUNR_STATE_HELPER set, TestMain runs the
// helper instead of the tests, in a real separate process.
const (
	helperEnv     = "RUNR_STATE_HELPER"
	helperHomeEnv = "RUNR_STATE_HELPER_HOME"
	helperRunEnv  = "RUNR_STATE_HELPER_RUN"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode, os.Getenv(helperHomeEnv), os.Getenv(helperRunEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(mode, home, id string) error {
	s, err := Open(home)
	if err != nil {
		return err
	}
	switch mode {
	case "saveloop":
		// Save state.json as fast as possible with a growing tick, reporting
		// each tick once Save has returned, until killed; every other save
		// is the lighter one of a process start.
		st, err := s.Load(id)
		if err != nil {
			return err
		}
		fmt.Printf("ready %d\n", st.Tick)
		for {
			st.Tick++
			st.LastErrorSignature = fmt.Sprintf("sig-%d", st.Tick)
			save := s.Save
			if st.Tick%2 == 0 {
				save = s.SaveProcessStart
			}
			if err := save(st); err != nil {
				return err
			}
			fmt.Printf("saved %d\n", st.Tick)
		}
	case "hold":
		// Hold the run's lock until stdin closes or the process is killed.
		l, err := s.Acquire(id)
		if err != nil {
			return err
		}
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return l.Release()
	case "race":
		// Try to take the lock once, as a second `runr resume` would, and
		// say how it went; a winner holds it until stdin closes.
		l, err := s.Acquire(id)
		if stopreasons.CodeOf(err) == stopreasons.RunLocked {
			fmt.Println("refused")
			_, _ = io.Copy(io.Discard, os.Stdin)
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return l.Release()
	case "diskfull":
		// Append events while the disk fills up for a moment: the file
		// size limit stands in for a full disk, and is lifted again, as
		// space comes back when something else frees it.
		signal.Ignore(syscall.SIGXFSZ)
		tl, err := s.OpenTimeline(id)
		if err != nil {
			return err
		}
		big := UnknownEvent{Type: "cut", Data: json.RawMessage(`{"output":"` + strings.Repeat("x", 4096) + `"}`)}
		if err := tl.Append(1, "implement", UnknownEvent{Type: "before"}); err != nil {
			return err
		}
		fi, err := os.Stat(s.TimelinePath(id))
		if err != nil {
			return err
		}
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			return err
		}
		full := lim
		full.Cur = uint64(fi.Size()) + 100
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full); err != nil {
			return err
		}
		if err := tl.Append(2, "implement", big); err == nil {
			return errors.New("an append past the size limit did not fail")
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			return err
		}
		if err := tl.Append(3, "implement", UnknownEvent{Type: "after"}); err != nil {
			return err
		}
		return tl.Close()
	case "probe":
		// Ask whether the run is held, as `runr status` does, over and over
		// until killed.
		for i := 0; ; i++ {
			if _, _, err := s.Locked(id); err != nil {
				return err
			}
			if i == 0 {
				fmt.Println("probing")
			}
		}
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// helper is a running helper process in its own process group.
type helper struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
	done   bool
}

func startHelper(t *testing.T, mode, home, id string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperHomeEnv+"="+home, helperRunEnv+"="+id)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &helper{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1024), stderr: &bytes.Buffer{}}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(h.kill)
	return h
}

// next returns the helper's next output line, failing the test if none comes
// within a generous deadline.
func (h *helper) next() string {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.kill()
			h.t.Fatalf("helper exited early; stderr: %s", h.stderr.String())
		}
		return line
	case <-time.After(10 * time.Second):
		h.t.Fatalf("helper printed nothing for 10s; stderr: %s", h.stderr.String())
	}
	return ""
}

// kill SIGKILLs the helper's process group and reaps it.
func (h *helper) kill() {
	if h.done {
		return
	}
	h.done = true
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	_ = h.cmd.Wait()
	// Let the reader goroutine finish whatever the helper printed last.
	go func() {
		for range h.lines {
		}
	}()
}
