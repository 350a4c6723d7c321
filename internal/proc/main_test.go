package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// produceEnv makes the test binary, started again by a test, a program that
// prints that many bytes of 80-byte lines and exits: a real producer of output
// whose own cost is a few large writes.
const produceEnv = "RUNR_WORKER_TEST_PRODUCE"

// quietEnv makes the test binary a program that prints nothing for a while
// and then exits 0, keeping busy as the value says: "cpu:DURATION" spins,
// "write:DURATION:FILE" appends to FILE every 20ms.
const quietEnv = "RUNR_PROC_TEST_QUIET"

func TestMain(m *testing.M) {
	if v := os.Getenv(quietEnv); v != "" {
		os.Exit(quiet(v))
	}
	if n := os.Getenv(produceEnv); n != "" {
		size, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			os.Exit(2)
		}
		if produce(size) != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// produceLine is one line of the producer's output, newline included.
var produceLine = append(bytes.Repeat([]byte("0123456789abcdef"), 5)[:79], '\n')

func produce(size int64) error {
	chunk := bytes.Repeat(produceLine, (64<<10)/len(produceLine))
	for size > 0 {
		w := chunk[:min(int64(len(chunk)), size)]
		if _, err := os.Stdout.Write(w); err != nil {
			return err
		}
		size -= int64(len(w))
	}
	return nil
}

func quiet(v string) int {
	kind, rest, _ := strings.Cut(v, ":")
	ds, file, _ := strings.Cut(rest, ":")
	d, err := time.ParseDuration(ds)
	if err != nil {
		return 2
	}
	end := time.Now().Add(d)
	switch kind {
	case "cpu":
		n := 0
		for time.Now().Before(end) {
			n++
		}
		_ = n
	case "write":
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return 2
		}
		defer f.Close()
		for time.Now().Before(end) {
			if _, err := f.Write([]byte("x")); err != nil {
				return 1
			}
			time.Sleep(20 * time.Millisecond)
		}
	default:
		return 2
	}
	return 0
}

// producer is the spec of a process printing size bytes of 80-byte lines.
func producer(tb testing.TB, size int64) Spec {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return Spec{Argv: []string{exe}, Env: append(os.Environ(), produceEnv+"="+strconv.FormatInt(size, 10))}
}
