// Command stamp stands in for a program on PATH and times each of its runs:
// built as DIR/NAME, it runs the program whose path DIR/NAME.program holds,
// with the same arguments, stdio, process group and environment, waits for
// it, and appends a line "START END ARGS..." (Unix nanoseconds, arguments
// separated by spaces) to DIR/NAME.log. The exit code is the program's,
// 128+N for a signal N.
//
// The Claude Code row puts it in front of the CLI for runr and for the bare
// loop alike, so that both runs' time inside the CLI's calls is known and
// the time around them can be compared.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

func main() {
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	program, err := os.ReadFile(self + ".program")
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(strings.TrimSpace(string(program)), os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err = cmd.Run()
	end := time.Now()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fail(err)
	}
	line := fmt.Sprintf("%d %d %s\n", start.UnixNano(), end.UnixNano(), strings.Join(os.Args[1:], " "))
	f, err := os.OpenFile(self+".log", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err)
	}
	if _, err := f.WriteString(line); err != nil {
		fail(err)
	}
	f.Close()
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	os.Exit(code)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "stamp:", err)
	os.Exit(127)
}
