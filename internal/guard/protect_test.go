package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// protectRepo is a repository with committed code and tests, a test file
// left untracked (as --allow-dirty lets a run start with), and ignored
// output.
func protectRepo(t *testing.T) string {
	t.Helper()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{
		".gitignore":          "/out/\n",
		"calc.go":             "package calc\n",
		"calc_test.go":        "package calc\n// TestAdd\n",
		"pkg/util_test.go":    "package pkg\n",
		"tests/golden/a.json": "{}\n",
	})
	writeFile(t, dir, "draft_test.go", "package calc\n// untracked at the start\n")
	writeFile(t, dir, "out/gen_test.go", "ignored at the start\n")
	return dir
}

// TestCheckProtect: a file that existed at the start and matches a glob
// may not be modified, deleted or renamed (its old name is gone); a new
// file may be added and changed again, and a file that matches no glob, or
// that the start's ignore rules left out, is not the rule's business.
func TestCheckProtect(t *testing.T) {
	t.Parallel()
	protect := []string{"**/*_test.go", "tests/"}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		want   []Violation
	}{
		{"modified", func(t *testing.T, dir string) {
			writeFile(t, dir, "calc_test.go", "package calc\n// weakened\n")
		}, []Violation{{Path: "calc_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeModified}}},
		{"deleted", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "pkg", "util_test.go")))
		}, []Violation{{Path: "pkg/util_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeDeleted}}},
		{"renamed", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "calc_test.go"), filepath.Join(dir, "calc_old.go")))
		}, []Violation{{Path: "calc_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeDeleted}}},
		{"renamed to another protected name", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, "calc_test.go"), filepath.Join(dir, "calc2_test.go")))
		}, []Violation{{Path: "calc_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeDeleted}}},
		{"a file under a protected directory", func(t *testing.T, dir string) {
			writeFile(t, dir, "tests/golden/a.json", "{\"weakened\": true}\n")
		}, []Violation{{Path: "tests/golden/a.json", Rule: stopreasons.RuleProtect, Pattern: "tests/", Change: ChangeModified}}},
		{"untracked at the start, modified", func(t *testing.T, dir string) {
			writeFile(t, dir, "draft_test.go", "package calc\n// changed\n")
		}, []Violation{{Path: "draft_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeModified}}},
		{"untracked at the start, deleted", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "draft_test.go")))
		}, []Violation{{Path: "draft_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeDeleted}}},
		{"made executable, content unchanged", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "calc_test.go"), 0o755))
		}, []Violation{{Path: "calc_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeMode}}},
		{"made non-executable, untracked at the start", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "draft_test.go"), 0o755))
		}, []Violation{{Path: "draft_test.go", Rule: stopreasons.RuleProtect, Pattern: "**/*_test.go", Change: ChangeMode}}},
		{"other permission bits", func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "calc_test.go"), 0o600))
		}, nil},
		{"new files, added and changed again", func(t *testing.T, dir string) {
			writeFile(t, dir, "new_test.go", "package calc\n")
			writeFile(t, dir, "new_test.go", "package calc\n// more\n")
			writeFile(t, dir, "tests/golden/b.json", "{}\n")
			writeFile(t, dir, "pkg/more_test.go", "package pkg\n")
		}, nil},
		{"unprotected files", func(t *testing.T, dir string) {
			writeFile(t, dir, "calc.go", "package calc\n// changed\n")
		}, nil},
		{"ignored at the start", func(t *testing.T, dir string) {
			writeFile(t, dir, "out/gen_test.go", "changed\n")
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := protectRepo(t)
			snap, err := TakeSnapshot(ctx, dir)
			require.NoError(t, err)
			tc.change(t, dir)
			changed, err := snap.ChangedFiles(ctx, dir)
			require.NoError(t, err)
			got, err := snap.CheckProtect(changed, protect)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "changed: %v", changed)
		})
	}
}

// TestCheckProtectAfterDecode: a resumed run judges against the snapshot
// of its start, as the run store keeps it.
func TestCheckProtectAfterDecode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := protectRepo(t)
	snap, err := TakeSnapshot(ctx, dir)
	require.NoError(t, err)
	data, err := snap.Encode()
	require.NoError(t, err)
	// Files made between the start and the resume are new: allowed.
	writeFile(t, dir, "later_test.go", "package calc\n")
	back, err := DecodeSnapshot(data)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "calc_test.go")))
	writeFile(t, dir, "later_test.go", "package calc\n// changed\n")
	changed, err := back.ChangedFiles(ctx, dir)
	require.NoError(t, err)
	got, err := back.CheckProtect(changed, []string{"*_test.go"})
	require.NoError(t, err)
	assert.Equal(t, []Violation{{Path: "calc_test.go", Rule: stopreasons.RuleProtect, Pattern: "*_test.go", Change: ChangeDeleted}}, got)
}

func TestCheckProtectBadGlobAndNone(t *testing.T) {
	t.Parallel()
	snap := &Snapshot{Files: map[string]FileState{"a_test.go": {Hash: "x"}}}
	_, err := snap.CheckProtect([]string{"a_test.go"}, []string{"[oops"})
	require.ErrorIs(t, err, ErrBadGlob)
	assert.Contains(t, err.Error(), "scope.protect")
	got, err := snap.CheckProtect([]string{"a_test.go"}, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// TestPinIgnoresRewrittenGitFile: once a snapshot's git dirs are pinned,
// git calls in the worktree name them, whatever its .git file says later;
// a snapshot read back from the run store (a resume) pins the same dirs.
func TestPinIgnoresRewrittenGitFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, true)
	commitFiles(t, repo, map[string]string{"a.txt": "a\n"})
	real := gitT(t, repo, "rev-parse", "HEAD")
	wt := filepath.Join(t.TempDir(), "wt")
	gitT(t, repo, "worktree", "add", "--quiet", "-b", "work", wt)
	wt, err := filepath.EvalSymlinks(wt)
	require.NoError(t, err)

	other := newRepo(t, true)
	commitFiles(t, other, map[string]string{"b.txt": "b\n"})
	fake := gitT(t, other, "rev-parse", "HEAD")

	snap, err := TakeSnapshot(ctx, wt)
	require.NoError(t, err)
	data, err := snap.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(other, ".git")+"\n"), 0o644))

	// Not pinned: git follows the rewritten file.
	head, err := Head(ctx, wt)
	require.NoError(t, err)
	require.Equal(t, fake, head)

	back, err := DecodeSnapshot(data)
	require.NoError(t, err)
	back.Pin(wt + "/")
	head, err = Head(ctx, wt)
	require.NoError(t, err)
	assert.Equal(t, real, head)
	top, err := TopLevel(ctx, wt)
	require.NoError(t, err)
	assert.Equal(t, wt, top)
	writeFile(t, wt, "c.txt", "c\n")
	sha, err := CommitAll(ctx, wt, "pinned", nil)
	require.NoError(t, err)
	assert.Equal(t, sha, gitT(t, repo, "rev-parse", "work"))
	assert.Equal(t, fake, gitT(t, other, "rev-parse", "HEAD"))
}
