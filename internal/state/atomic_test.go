package state

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
	raceReader(t, path, bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 128<<10), 100,
		func(data []byte) error { return WriteAtomic(path, data) })
}

// raceReader writes a to path, then writes b and a in turn, rounds times in
// all, with write, while another goroutine reads path over and over; each
// read must be a whole a or a whole b.
func raceReader(t *testing.T, path string, a, b []byte, rounds int, write func([]byte) error) {
	t.Helper()
	require.NoError(t, WriteAtomic(path, a))
	done := make(chan struct{})
	var wg sync.WaitGroup
	var readErr error
	reads := 0
	wg.Go(func() {
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
	})
	for i := range rounds {
		next := a
		if i%2 == 0 {
			next = b
		}
		require.NoError(t, write(next))
	}
	close(done)
	wg.Wait()
	require.NoError(t, readErr, "a reader saw a partial file")
	assert.Positive(t, reads)
}

// Every failing write leaves the directory as it was: no temporary file, and
// the target unchanged.
func TestWriteAtomicFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	// The rename fails: the target is a directory that is not empty.
	target := filepath.Join(dir, "state.json")
	require.NoError(t, os.MkdirAll(filepath.Join(target, "inside"), 0o755))
	err := WriteAtomic(target, []byte("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), target)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the directory that was there: %v", entries)
	assert.Equal(t, "state.json", entries[0].Name())
	assert.True(t, entries[0].IsDir())
}

// temps lists the temporary files of dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestWriteAtomicFiles: several files of a directory are replaced
// together, each whole, with nothing temporary left; a symlink at one of
// them is refused before any is replaced.
func TestWriteAtomicFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("old a"), 0o644))
	require.NoError(t, WriteAtomicFiles(dir, []File{{"a", []byte("new a")}, {"b", []byte("new b")}}))
	for name, want := range map[string]string{"a": "new a", "b": "new b"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(data))
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	}
	assert.Empty(t, temps(t, dir))

	target := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.WriteFile(target, []byte("theirs"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "b")))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "b")))
	require.NoError(t, os.Remove(filepath.Join(dir, "a")))
	require.Error(t, WriteAtomicFiles(dir, []File{{"a", []byte("x")}, {"b", []byte("y")}}))
	_, err := os.Stat(filepath.Join(dir, "a"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing replaced")
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "theirs", string(data))
	assert.Empty(t, temps(t, dir))
}
