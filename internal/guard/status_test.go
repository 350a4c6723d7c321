package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChangesOnRealRepo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{
		".gitignore":   "*.log\n",
		"mod.txt":      "one\n",
		"del.txt":      "gone soon\n",
		"old name.txt": "moved\n",
		"sub/keep.txt": "keep\n",
	})

	writeFile(t, dir, "mod.txt", "two\n")
	require.NoError(t, os.Remove(filepath.Join(dir, "del.txt")))
	gitT(t, dir, "mv", "old name.txt", "sub/new name.txt")
	writeFile(t, dir, "staged.txt", "staged\n")
	gitT(t, dir, "add", "staged.txt")
	writeFile(t, dir, "with space.txt", "x")
	writeFile(t, dir, "line\nbreak.txt", "x")
	writeFile(t, dir, "bad\xff\xfename.txt", "x")
	writeFile(t, dir, "deep/er/untracked.txt", "x")
	writeFile(t, dir, "debug.log", "ignored")
	writeFile(t, dir, ".git/runr/runs/r1/state.json", "{}")

	changes, err := Changes(ctx, filepath.Join(dir, "sub"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []Change{
		{Path: "mod.txt", Kind: KindModified},
		{Path: "del.txt", Kind: KindDeleted},
		{Path: "sub/new name.txt", OrigPath: "old name.txt", Kind: KindRenamed},
		{Path: "staged.txt", Kind: KindAdded},
		{Path: "with space.txt", Kind: KindUntracked},
		{Path: "line\nbreak.txt", Kind: KindUntracked},
		{Path: "bad\xff\xfename.txt", Kind: KindUntracked},
		{Path: "deep/er/untracked.txt", Kind: KindUntracked},
	}, changes)

	assert.Equal(t, []string{
		"bad\xff\xfename.txt", "deep/er/untracked.txt", "del.txt", "line\nbreak.txt",
		"mod.txt", "old name.txt", "staged.txt", "sub/new name.txt", "with space.txt",
	}, Paths(changes))
}

func TestChangesUnmerged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"f.txt": "base\n"})
	gitT(t, dir, "checkout", "--quiet", "-b", "other")
	commitFiles(t, dir, map[string]string{"f.txt": "other\n"})
	gitT(t, dir, "checkout", "--quiet", "main")
	commitFiles(t, dir, map[string]string{"f.txt": "main\n"})
	cmdErr := func() error { _, err := git(ctx, dir, "merge", "--quiet", "other"); return err }()
	require.Error(t, cmdErr, "the merge must conflict")

	changes, err := Changes(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, []Change{{Path: "f.txt", Kind: KindUnmerged}}, changes)
}

func TestChangesCleanAndOutsideRepo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a": "a"})
	changes, err := Changes(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, changes)

	outside := t.TempDir()
	_, err = Changes(ctx, outside)
	require.ErrorIs(t, err, ErrNotRepository)
	assert.Contains(t, err.Error(), outside)
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	const h = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name string
		in   string
		want []Change
		err  bool
	}{
		{name: "empty", in: "", want: nil},
		{name: "headers and ignored skipped", in: "# branch.oid " + h + "\x00! junk.log\x00", want: nil},
		{name: "modified", in: "1 .M N... 100644 100644 100644 " + h + " " + h + " a b.txt\x00",
			want: []Change{{Path: "a b.txt", Kind: KindModified}}},
		{name: "staged and worktree modified", in: "1 MM N... 100644 100644 100644 " + h + " " + h + " x\x00",
			want: []Change{{Path: "x", Kind: KindModified}}},
		{name: "added", in: "1 A. N... 000000 100644 100644 " + h + " " + h + " new\x00",
			want: []Change{{Path: "new", Kind: KindAdded}}},
		{name: "intent to add", in: "1 .A N... 000000 000000 100644 " + h + " " + h + " ita\x00",
			want: []Change{{Path: "ita", Kind: KindAdded}}},
		{name: "added then removed from disk", in: "1 AD N... 000000 100644 000000 " + h + " " + h + " ad\x00",
			want: []Change{{Path: "ad", Kind: KindDeleted}}},
		{name: "deleted", in: "1 D. N... 100644 000000 000000 " + h + " " + h + " d\x00",
			want: []Change{{Path: "d", Kind: KindDeleted}}},
		{name: "renamed", in: "2 R. N... 100644 100644 100644 " + h + " " + h + " R100 new name\x00old\nname\x00",
			want: []Change{{Path: "new name", OrigPath: "old\nname", Kind: KindRenamed}}},
		{name: "copied", in: "2 C. N... 100644 100644 100644 " + h + " " + h + " C75 copy\x00orig\x00",
			want: []Change{{Path: "copy", OrigPath: "orig", Kind: KindCopied}}},
		{name: "unmerged", in: "u UU N... 100644 100644 100644 100644 " + h + " " + h + " " + h + " c f\x00",
			want: []Change{{Path: "c f", Kind: KindUnmerged}}},
		{name: "untracked non-utf8", in: "? \xff\xfe\x00? dir/x\x00",
			want: []Change{{Path: "\xff\xfe", Kind: KindUntracked}, {Path: "dir/x", Kind: KindUntracked}}},
		{name: "rename without original", in: "2 R. N... 100644 100644 100644 " + h + " " + h + " R100 new", err: true},
		{name: "short record", in: "1 .M N... 100644\x00", err: true},
		{name: "unknown record", in: "z what\x00", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tt.in))
			if tt.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	got := Paths([]Change{
		{Path: "z", Kind: KindModified},
		{Path: "b", OrigPath: "a", Kind: KindRenamed},
		{Path: "a", Kind: KindUntracked},
	})
	assert.Equal(t, []string{"a", "b", "z"}, got)
	assert.Empty(t, Paths(nil))
}

func TestDirtyIgnoresListedPaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"main.go": "package main\n"})
	writeFile(t, dir, "TASK.md", "- [ ] do it\n")
	writeFile(t, dir, "runr.yaml", "budget: {time: 5m}\n")

	dirty, err := Dirty(ctx, dir, []string{"TASK.md", "runr.yaml"})
	require.NoError(t, err)
	assert.Empty(t, dirty)

	writeFile(t, dir, "main.go", "package main // edited\n")
	dirty, err = Dirty(ctx, dir, []string{"TASK.md", "runr.yaml"})
	require.NoError(t, err)
	assert.Equal(t, []string{"main.go"}, dirty)
}
