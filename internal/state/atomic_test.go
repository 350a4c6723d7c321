package state

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	require.NoError(t, WriteAtomic(path, []byte("one")))
	require.NoError(t, WriteAtomic(path, []byte("two")))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	missing := filepath.Join(dir, "no-such-dir", "f.json")
	err = WriteAtomic(missing, []byte("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
}

// A reader racing a writer sees one whole version or the other, never a mix
// or an empty file.
func TestWriteAtomicReaderSeesWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	a := bytes.Repeat([]byte("a"), 256<<10)
	b := bytes.Repeat([]byte("b"), 128<<10)
	require.NoError(t, WriteAtomic(path, a))

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var readErr error
	reads := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			data, err := os.ReadFile(path)
			if err != nil {
				readErr = err
				return
			}
			if !bytes.Equal(data, a) && !bytes.Equal(data, b) {
				readErr = assert.AnError
				return
			}
			reads++
		}
	}()
	for i := range 100 {
		next := a
		if i%2 == 0 {
			next = b
		}
		require.NoError(t, WriteAtomic(path, next))
	}
	close(done)
	wg.Wait()
	require.NoError(t, readErr, "a reader saw a partial file")
	assert.Positive(t, reads)
}
