package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnchorPattern(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dir, line, want string }{
		{".", "*.log", "*.log"},
		{".", "/build/", "/build/"},
		{"sub", "*.tmp", "/sub/**/*.tmp"},
		{"sub", "out/", "/sub/**/out/"},
		{"sub", "/only-here", "/sub/only-here"},
		{"sub", "a/b", "/sub/a/b"},
		{"sub", "!keep.tmp", "!/sub/**/keep.tmp"},
		{"sub", "# comment", "# comment"},
		{"sub", "", ""},
	} {
		assert.Equal(t, tc.want, anchorPattern(tc.dir, tc.line), "%s: %q", tc.dir, tc.line)
	}
}

// snapRepo is a repository with tracked files, a committed .gitignore at the
// root and one below it, and ignored build output, at rest long enough that
// stat data can be trusted.
func snapRepo(t *testing.T) string {
	t.Helper()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{
		".gitignore":     "/build/\n*.log\n",
		"sub/.gitignore": "*.tmp\n!keep.tmp\n",
		"src/a.go":       "package a\n",
		"cfg/prod.yaml":  "prod\n",
	})
	writeFile(t, dir, "build/out.o", "o")
	writeFile(t, dir, "debug.log", "l")
	return dir
}

// TestSnapshotSeesHiddenChanges: whatever the agent does to the index or
// the ignore rules, every file it created, changed or deleted is reported;
// what the start's rules ignored stays ignored.
func TestSnapshotSeesHiddenChanges(t *testing.T) {
	t.Parallel()
	for _, tc := range hidingCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := snapRepo(t)
			snap, err := TakeSnapshot(ctx, dir)
			require.NoError(t, err)
			// Outside the racy window, so that stat data is trusted.
			snap.Taken = time.Now().Add(racyWindow + time.Minute)
			tc.do(t, dir)
			got, err := snap.ChangedFiles(ctx, dir)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestSnapshotMeta: git's own config, info and hooks files are reported when
// created, changed or removed, named as .git/...; other files of .git are not.
func TestSnapshotMeta(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := snapRepo(t)
	writeFile(t, dir, ".git/hooks/pre-push", "#!/bin/sh\n")
	snap, err := TakeSnapshot(ctx, dir)
	require.NoError(t, err)
	got, err := snap.ChangedMeta(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, got)

	gitT(t, dir, "config", "core.quotePath", "false")
	writeFile(t, dir, ".git/info/attributes", "* -diff\n")
	require.NoError(t, os.Remove(filepath.Join(dir, ".git/hooks/pre-push")))
	writeFile(t, dir, ".git/hooks/post-index-change", "#!/bin/sh\n")
	commitFiles(t, dir, map[string]string{"src/b.go": "package a\n"})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git", "runr"), 0o755))
	writeFile(t, dir, ".git/runr/state.json", "{}")

	got, err = snap.ChangedMeta(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{".git/config", ".git/hooks/post-index-change", ".git/hooks/pre-push", ".git/info/attributes"}, got)
}

// TestSnapshotSaveLoad: a snapshot read back compares the same, names that
// are not UTF-8 included; a missing file is fs.ErrNotExist.
func TestSnapshotSaveLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := snapRepo(t)
	odd := "caf\xe9.txt"
	writeFile(t, dir, odd, "x")
	snap, err := TakeSnapshot(ctx, dir)
	require.NoError(t, err)
	require.Contains(t, snap.Files, odd)
	data, err := snap.Encode()
	require.NoError(t, err)
	back, err := DecodeSnapshot(data)
	require.NoError(t, err)
	assert.Equal(t, snap.Files, back.Files)
	assert.Equal(t, snap.Meta, back.Meta)
	assert.True(t, snap.Taken.Equal(back.Taken))

	require.NoError(t, os.Remove(filepath.Join(dir, odd)))
	got, err := back.ChangedFiles(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{odd}, got)

	_, err = DecodeSnapshot([]byte("junk"))
	assert.ErrorContains(t, err, "damaged")
}

// hidingCases are the ways an agent can hide a change from git status, and
// what a guard must still report after each (snapRepo's tree).
var hidingCases = []struct {
	name string
	do   func(t *testing.T, dir string)
	want []string
}{
	{"nothing", func(t *testing.T, dir string) {}, nil},
	{"ignored at the start", func(t *testing.T, dir string) {
		writeFile(t, dir, "build/new.o", "o")
		writeFile(t, dir, "deep/x.log", "l")
		writeFile(t, dir, "sub/a/b.tmp", "t")
	}, nil},
	{"rules of a nested .gitignore stay below it", func(t *testing.T, dir string) {
		writeFile(t, dir, "top.tmp", "t")
		writeFile(t, dir, "sub/keep.tmp", "t")
	}, []string{"sub/keep.tmp", "top.tmp"}},
	{"info/exclude", func(t *testing.T, dir string) {
		writeFile(t, dir, ".git/info/exclude", "secret\n")
		writeFile(t, dir, "secret", "s")
	}, []string{"secret"}},
	{"core.excludesFile", func(t *testing.T, dir string) {
		writeFile(t, dir, "../ignore", "secret\n")
		gitT(t, dir, "config", "core.excludesFile", filepath.Join(filepath.Dir(dir), "ignore"))
		writeFile(t, dir, "secret", "s")
	}, []string{"secret"}},
	{"a new .gitignore rule", func(t *testing.T, dir string) {
		writeFile(t, dir, "src/.gitignore", ".gitignore\nsecret\n")
		writeFile(t, dir, "src/secret", "s")
		writeFile(t, dir, ".gitignore", "*\n")
	}, []string{".gitignore", "src/.gitignore", "src/secret"}},
	{"assume-unchanged", func(t *testing.T, dir string) {
		writeFile(t, dir, "cfg/prod.yaml", "evil\n")
		gitT(t, dir, "update-index", "--assume-unchanged", "cfg/prod.yaml")
	}, []string{"cfg/prod.yaml"}},
	{"skip-worktree and delete", func(t *testing.T, dir string) {
		gitT(t, dir, "update-index", "--skip-worktree", "cfg/prod.yaml")
		require.NoError(t, os.Remove(filepath.Join(dir, "cfg/prod.yaml")))
	}, []string{"cfg/prod.yaml"}},
	{"untracked in the index, same bytes", func(t *testing.T, dir string) {
		gitT(t, dir, "rm", "--cached", "--quiet", "src/a.go")
	}, nil},
	{"same size and mtime, new bytes", func(t *testing.T, dir string) {
		p := filepath.Join(dir, "src/a.go")
		info, err := os.Stat(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, []byte("package b\n"), 0o644))
		require.NoError(t, os.Chtimes(p, info.ModTime(), info.ModTime()))
	}, []string{"src/a.go"}},
}

// A file of terabytes (sparse: zeros, read as fast as the disk goes, for
// hours) does not hold a look past the stop WithReadStop names (a
// signal), though the look's git commands go on.
func TestLookGivesUpOnAHugeFile(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "a\n"})
	snap, err := TakeSnapshot(context.Background(), repo)
	require.NoError(t, err)
	tr, err := snap.NewTracker(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	f, err := os.Create(filepath.Join(repo, "big.bin"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(4<<40))
	require.NoError(t, f.Close())

	stop, stopNow := context.WithCancel(context.Background())
	stopNow()
	_, err = tr.Look(WithReadStop(context.Background(), stop), "", nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "big.bin")
}

// A snapshot taken by a runr that did not read submodules marked one as a
// plain directory: resumed, the run does not take it for changed, while a
// commit inside the submodule of a snapshot of today's is a change.
func TestSubmoduleOfAnOlderSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lib := newRepo(t, true)
	commitFiles(t, lib, map[string]string{"lib.go": "package lib\n"})
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a.txt": "a\n"})
	gitT(t, dir, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib, "deps/lib")
	gitT(t, dir, "commit", "--quiet", "-m", "add submodule")
	for _, older := range []bool{true, false} {
		snap, err := TakeSnapshot(ctx, dir)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(snap.Files["deps/lib"].Hash, "submodule:"), snap.Files["deps/lib"].Hash)
		require.Contains(t, snap.Files, "deps/lib/lib.go")
		if older {
			f := snap.Files["deps/lib"]
			f.Hash = "directory"
			snap.Files["deps/lib"] = f
			delete(snap.Files, "deps/lib/lib.go")
			// A new ignore rule has the look list the whole tree
			// against the snapshot.
			writeFile(t, dir, ".gitignore", "*.tmp\n")
		}
		tr, err := snap.NewTracker(t.TempDir())
		require.NoError(t, err)
		look, err := tr.Look(ctx, gitT(t, dir, "rev-parse", "HEAD"), nil)
		require.NoError(t, err)
		tr.Close()
		if older {
			assert.Equal(t, []string{".gitignore"}, look.Changed, "an older snapshot's submodule is no change")
			require.NoError(t, os.Remove(filepath.Join(dir, ".gitignore")))
			continue
		}
		assert.Empty(t, look.Changed)
		sub := filepath.Join(dir, "deps", "lib")
		gitT(t, sub, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", "moved")
		tr, err = snap.NewTracker(t.TempDir())
		require.NoError(t, err)
		look, err = tr.Look(ctx, gitT(t, dir, "rev-parse", "HEAD"), nil)
		require.NoError(t, err)
		tr.Close()
		assert.Equal(t, []string{"deps/lib"}, look.Changed)
	}
}
