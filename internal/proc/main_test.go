package proc

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// produceEnv makes the test binary, started again by a test, a program that
// prints that many bytes of 80-byte lines and exits: a real producer of output
// whose own cost is a few large writes.
const produceEnv = "RUNR_WORKER_TEST_PRODUCE"

func TestMain(m *testing.M) {
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

// producer is the spec of a process printing size bytes of 80-byte lines.
func producer(tb testing.TB, size int64) Spec {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return Spec{Argv: []string{exe}, Env: append(os.Environ(), produceEnv+"="+strconv.FormatInt(size, 10))}
}
