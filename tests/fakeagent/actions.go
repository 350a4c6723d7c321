package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runr-dev/runr/examples/demo/demofix"
)

// runner executes actions for one call.
type runner struct {
	prompt      string
	call        call
	ignoresTerm bool
}

const defaultChildSleep = 60 * time.Second

func (r *runner) do(a action) error {
	switch a.name {
	case "write":
		return writeFile(a.args[0], textArg(a.args), false)
	case "append":
		return writeFile(a.args[0], textArg(a.args), true)
	case "delete":
		return os.Remove(a.args[0])
	case "rename":
		return os.Rename(a.args[0], a.args[1])
	case "print":
		return writeLine(os.Stdout, strings.Join(a.args, ""))
	case "eprint":
		return writeLine(os.Stderr, strings.Join(a.args, ""))
	case "status":
		return writeLine(os.Stdout, "RUNR_STATUS: "+strings.Join(a.args, " "))
	case "promise":
		return writeLine(os.Stdout, "<promise>COMPLETE</promise>")
	case "exit":
		n, _ := strconv.Atoi(a.args[0])
		return exitCode(n)
	case "sleep":
		d, _ := time.ParseDuration(a.args[0])
		time.Sleep(d)
		return nil
	case "hang":
		for {
			time.Sleep(time.Hour)
		}
	case "spin":
		// Busy on a CPU and silent, as a long build is.
		d, _ := time.ParseDuration(a.args[0])
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
		return nil
	case "trickle":
		// Silent, but writing a file steadily.
		d, _ := time.ParseDuration(a.args[1])
		f, err := os.OpenFile(a.args[0], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if _, err := f.Write([]byte("x")); err != nil {
				return err
			}
		}
		return nil
	case "ignore-term":
		ignoreTerm()
		r.ignoresTerm = true
		return nil
	case "grandchild":
		return r.spawn("GRANDCHILD", durationArg(a.args), true)
	case "background":
		return r.spawn("BACKGROUND", durationArg(a.args), false)
	case "flood":
		n, _ := parseSize(a.args[0])
		return flood(os.Stdout, n)
	case "flood-lines":
		n, _ := strconv.Atoi(a.args[0])
		return floodLines(os.Stdout, n)
	case "ready":
		return announce(fmt.Sprintf("FAKEAGENT READY pid=%d", os.Getpid()))
	case "wait-for":
		return waitFor(a.args[0])
	case "echo-prompt":
		return writeLine(os.Stdout, strings.TrimSuffix(r.prompt, "\n"))
	case "env":
		return printEnv(os.Stdout)
	case "fix-test":
		return r.fixTest(a.args)
	case "touch-count":
		it := os.Getenv("RUNR_ITERATION")
		if it == "" {
			it = "-"
		}
		return appendFile(a.args[0], it+"\n")
	case "json":
		return copyLines(os.Stdout, a.args[0])
	case "usage":
		line := fmt.Sprintf("RUNR_USAGE: input_tokens=%s output_tokens=%s", a.args[0], a.args[1])
		if len(a.args) > 2 {
			line += " cost_usd=" + a.args[2]
		}
		if len(a.args) > 3 {
			line += " model=" + a.args[3]
		}
		return writeLine(os.Stdout, line)
	}
	// parseAction accepts only the names above.
	return fmt.Errorf("action %q has no implementation", a.name)
}

// textArg is the optional text after the first argument.
func textArg(args []string) string {
	if len(args) < 2 {
		return ""
	}
	return args[1]
}

func durationArg(args []string) time.Duration {
	if len(args) == 0 {
		return defaultChildSleep
	}
	d, _ := time.ParseDuration(args[0])
	return d
}

func writeLine(w io.Writer, s string) error {
	_, err := io.WriteString(w, s+"\n")
	return err
}

func writeFile(path, text string, appending bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if appending {
		return appendFile(path, text)
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// appendFile appends s in a single write, so lines from several processes do
// not interleave.
func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// announce prints a line a test waits for on stderr and appends it to
// FAKEAGENT_READY_FILE, which a test can poll without reading the pipes.
func announce(line string) error {
	if err := writeLine(os.Stderr, line); err != nil {
		return err
	}
	if path := os.Getenv("FAKEAGENT_READY_FILE"); path != "" {
		return appendFile(path, line+"\n")
	}
	return nil
}

// ignoreTerm makes SIGTERM harmless to this process and appends "FAKEAGENT
// TERM IGNORED pid=PID" to FAKEAGENT_READY_FILE for each one, so that a test
// can wait for the signal to have arrived instead of sleeping. The line goes
// to the file only: a write to a closed stderr would kill the process.
func ignoreTerm() {
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		for range terms {
			if path := os.Getenv("FAKEAGENT_READY_FILE"); path != "" {
				_ = appendFile(path, fmt.Sprintf("FAKEAGENT TERM IGNORED pid=%d\n", os.Getpid()))
			}
		}
	}()
}

func waitFor(path string) error {
	for {
		_, err := os.Stat(path)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flood writes n bytes of 1 KiB lines in 1 MiB writes.
func flood(w io.Writer, n int64) error {
	line := strings.Repeat("x", 1023) + "\n"
	chunk := []byte(strings.Repeat(line, 1024))
	for n > 0 {
		b := chunk
		if int64(len(b)) > n {
			b = b[:n]
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		n -= int64(len(b))
	}
	return nil
}

func floodLines(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 64*1024)
	for i := 1; i <= n; i++ {
		if _, err := fmt.Fprintf(bw, "fakeagent line %d of %d\n", i, n); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func printEnv(w io.Writer) error {
	var vars []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "RUNR_") {
			vars = append(vars, kv)
		}
	}
	sort.Strings(vars)
	for _, kv := range vars {
		if err := writeLine(w, kv); err != nil {
			return err
		}
	}
	return nil
}

// copyLines copies a file to w one line per write, as an agent streams events.
func copyLines(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (r *runner) fixTest(args []string) error {
	number, goal := r.call.milestone, os.Getenv("RUNR_MILESTONE_GOAL")
	if len(args) == 1 {
		number, _ = strconv.Atoi(args[0])
		goal = ""
	}
	m, err := demofix.Find(goal, number)
	if err != nil {
		return err
	}
	applied, err := m.Complete(".")
	for _, s := range applied {
		if perr := writeLine(os.Stdout, "fakeagent: fixed "+s.File); perr != nil {
			return perr
		}
	}
	return err
}

// childEnv tells a process started by grandchild or background that it is the
// child: "NAME DURATION [ignore-term]".
const childEnv = "FAKEAGENT_CHILD"

// spawn starts a copy of this program that sleeps in the same process group.
// The grandchild keeps stdout and stderr, so the pipes stay open after this
// program exits; the background child gets /dev/null. It inherits ignore-term
// explicitly: the Go runtime does not keep an inherited SIG_IGN for SIGTERM.
func (r *runner) spawn(name string, d time.Duration, keepStdio bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	spec := name + " " + d.String()
	if r.ignoresTerm {
		spec += " ignore-term"
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+spec)
	if keepStdio {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the %s child: %w", strings.ToLower(name), err)
	}
	pid := cmd.Process.Pid
	// Nobody waits for the child: it is meant to outlive this program.
	if err := cmd.Process.Release(); err != nil {
		return err
	}
	return announce(fmt.Sprintf("FAKEAGENT %s pid=%d", name, pid))
}

// runChild is the life of a grandchild or background child.
func runChild(spec string) int {
	fields := strings.Fields(spec)
	if len(fields) < 2 {
		fmt.Fprintf(os.Stderr, "fakeagent: %s=%q: want NAME DURATION [ignore-term]\n", childEnv, spec)
		return 2
	}
	d, err := time.ParseDuration(fields[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: %s=%q: %v\n", childEnv, spec, err)
		return 2
	}
	if len(fields) > 2 && fields[2] == "ignore-term" {
		ignoreTerm()
	}
	fmt.Fprintf(os.Stdout, "fakeagent %s pid=%d sleeping %s\n", strings.ToLower(fields[0]), os.Getpid(), d)
	time.Sleep(d)
	return 0
}
