package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildReusesOneBinaryPerProgram(t *testing.T) {
	dir, err := Build(FakeAgent)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, FakeAgent.Name))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&0o111, "the binary is executable")

	again, err := Build(FakeAgent)
	require.NoError(t, err)
	assert.Equal(t, dir, again)
	assert.Equal(t, filepath.Join(dir, FakeAgent.Name), Bin(t, FakeAgent))

	_, err = Build(Program{Pkg: "./no/such/package", Name: "nothing"})
	assert.ErrorContains(t, err, "build ./no/such/package")
}

func TestPollEndsWhenTheConditionHolds(t *testing.T) {
	calls := 0
	assert.True(t, Poll(WaitLimit, func() bool { calls++; return calls == 3 }))
	assert.Equal(t, 3, calls)

	start := time.Now()
	assert.False(t, Poll(50*time.Millisecond, func() bool { return false }))
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
}

// recorder is a testing.TB that keeps the message of Fatalf.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitForNamesWhatItAwaited(t *testing.T) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		waitWithin(r, 20*time.Millisecond, "the agent's ready line", func() bool { return false })
	}()
	<-done
	assert.Equal(t, "gave up after 20ms waiting for the agent's ready line", r.fatal)
}

func TestWaitForLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ready")
	go func() {
		time.Sleep(20 * time.Millisecond) // the line arrives later than the first look
		tmp := filepath.Join(dir, "tmp")
		_ = os.WriteFile(tmp, []byte("noise\nFAKEAGENT READY pid=7\nFAKEAGENT READY pid=8\n"), 0o644)
		_ = os.Rename(tmp, file)
	}()
	assert.Equal(t, "FAKEAGENT READY pid=7", WaitForLine(t, file, "FAKEAGENT READY"))
	assert.Equal(t, 2, FileCount(file, "FAKEAGENT READY"))
	assert.True(t, FileContains(file, "pid=8")())
	assert.False(t, FileContains(file, "pid=9")())
	assert.False(t, FileContains(filepath.Join(t.TempDir(), "missing"), "")())
}

func TestRandReplaysAFixedSeed(t *testing.T) {
	t.Setenv(SeedEnv, "1234")
	a, b := Rand(t), Rand(t)
	for range 5 {
		assert.Equal(t, a.Uint64(), b.Uint64())
	}
}
