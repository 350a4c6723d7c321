package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeFiles are the entries of a run directory the fuzz target damages.
var storeFiles = []string{"state.json", "lock", "timeline.jsonl", "config.json", "guard-snapshot.gob",
	"task.md", "stop.json", "report.md", "logs", "prompts", "runr.log"}

// Damages the fuzz target does to one entry of a run directory.
const (
	damageTruncate = iota // cut to len(data) bytes
	damageReplace         // replace with data
	damageFlip            // xor the bytes at the start with data
	damageFIFO            // a FIFO in its place
	damageSymlink         // a symlink to a file outside the store
	damageDir             // a directory in its place
	damageRemove          // gone
	damageDirLink         // a symlink to a directory outside the store
	damages
)

// FuzzStoreDamage damages one entry of a stopped run's directory (its
// content, or its type: a FIFO, a symlink, a directory) and drives status,
// doctor, logs, report and resume over it as real processes. None may hang
// (recRunr bounds each), exit 1 or crash (exit 2 and a Go panic), or write
// outside the run directory: the files symlinks point to are left as they
// were. The seed corpus runs in make test; make fuzz runs it at length.
func FuzzStoreDamage(f *testing.F) {
	for i := range storeFiles {
		f.Add(uint8(i), uint8(damageFIFO), []byte(nil))
	}
	f.Add(uint8(0), uint8(damageReplace), []byte(`{"run_id":"x","schema_version":1,"guard_head":"--output=/tmp/x"}`))
	f.Add(uint8(0), uint8(damageTruncate), []byte("0123456789"))
	f.Add(uint8(1), uint8(damageSymlink), []byte(nil))
	f.Add(uint8(2), uint8(damageDir), []byte(nil))
	f.Add(uint8(3), uint8(damageFlip), []byte("\xff\x00\x10"))
	f.Add(uint8(4), uint8(damageTruncate), []byte("0123456789012345"))
	f.Add(uint8(8), uint8(damageDirLink), []byte(nil))
	f.Add(uint8(7), uint8(damageRemove), []byte(nil))
	f.Fuzz(func(t *testing.T, which, how uint8, data []byte) {
		name := storeFiles[int(which)%len(storeFiles)]
		kind := int(how) % damages
		repo, runDir := seStoppedRun(t)
		id := filepath.Base(runDir)
		outside := t.TempDir()
		outFile := filepath.Join(outside, "precious")
		require.NoError(t, os.WriteFile(outFile, []byte("precious\n"), 0o644))
		before := snapshotDir(t, outside)

		path := filepath.Join(runDir, name)
		t.Logf("damage %s: %d with %d bytes", name, kind, len(data))
		damageEntry(t, path, kind, data, outFile, outside)

		for _, args := range [][]string{
			{"status"},
			{"status", id},
			{"doctor", id},
			{"logs", id},
			{"report"},
			{"resume", id, "--max-iterations", "1", "--quiet"},
		} {
			code, stdout, stderr := recRunr(t, repo, nil, args...)
			what := strings.Join(args, " ")
			assert.NotEqual(t, 1, code, "%s after damage %d to %s: a code that says nothing\n%s%s", what, kind, name, stdout, stderr)
			assert.NotEqual(t, 2, code, "%s after damage %d to %s: a crash\n%s%s", what, kind, name, stdout, stderr)
			assert.NotContains(t, stderr, "panic:", what)
		}
		assert.Equal(t, before, snapshotDir(t, outside), "damage %d to %s: runr wrote outside the run directory", kind, name)
	})
}

// damageEntry does damage kind to the entry at path of a run directory.
func damageEntry(t *testing.T, path string, kind int, data []byte, outFile, outDir string) {
	t.Helper()
	replace := func() { require.NoError(t, os.RemoveAll(path)) }
	switch kind {
	case damageTruncate, damageReplace, damageFlip:
		old, err := os.ReadFile(path)
		if err != nil {
			// A directory (logs/, prompts/) or a file the run did not
			// write: it becomes a file holding data.
			replace()
			old = nil
		}
		switch kind {
		case damageTruncate:
			data = old[:min(len(data), len(old))]
		case damageFlip:
			flipped := bytes.Clone(old)
			for i := range min(len(data), len(flipped)) {
				flipped[i] ^= data[i]
			}
			data = flipped
		}
		require.NoError(t, os.WriteFile(path, data, 0o644))
	case damageFIFO:
		replace()
		require.NoError(t, syscall.Mkfifo(path, 0o644))
	case damageSymlink:
		replace()
		require.NoError(t, os.Symlink(outFile, path))
	case damageDir:
		replace()
		require.NoError(t, os.Mkdir(path, 0o755))
	case damageRemove:
		replace()
	case damageDirLink:
		replace()
		require.NoError(t, os.Symlink(outDir, path))
	}
}

// snapshotDir is every file under dir with its content and mode.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.IsDir() {
			out[rel] = fi.Mode().String()
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = fi.Mode().String() + " " + string(data)
		return err
	}))
	return out
}
