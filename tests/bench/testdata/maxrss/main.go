// Command maxrss runs a program and writes its peak resident set size, in
// bytes, to a file: maxrss FILE PROGRAM ARGS...
//
// A process started by a large one (the benchmark's test binary) inherits
// that process's size as its peak: Go starts children with vfork, and the
// kernel keeps the parent's high-water mark across the exec. Started from
// this small program instead, the figure is the program's own (with this
// program's size as its floor, which a run of `true` shows). The exit code is
// the program's, 128+N for a signal N.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: maxrss FILE PROGRAM [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		os.Exit(127)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rss := int64(0)
	if ru != nil {
		rss = int64(ru.Maxrss)
		if runtime.GOOS != "darwin" { // Linux counts KiB, macOS bytes
			rss *= 1024
		}
	}
	if err := os.WriteFile(os.Args[1], []byte(fmt.Sprint(rss)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		os.Exit(127)
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	os.Exit(code)
}
