package guard

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lines a milestone added or modified, from the tree it started on:
// in tracked and untracked files, with their numbers as the files are now;
// deleted lines and ignored files are not among them.
func TestAddedLines(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a.go": "package a\n\nfunc A() {}\n", ".gitignore": "cover.out\n", "gone.go": "x\n"})
	start, err := TreeHash(ctx, dir)
	require.NoError(t, err)

	writeFile(t, dir, "a.go", "package a\n\n// A does a.\nfunc A() { println() }\n")
	writeFile(t, dir, "new dir/b \"q\".go", "package b\nfunc B() {}\n")
	writeFile(t, dir, "cover.out", "mode: set\n")
	gitT(t, dir, "rm", "-q", "gone.go")

	lines, cut, err := AddedLines(ctx, dir, start)
	require.NoError(t, err)
	assert.False(t, cut)
	assert.Equal(t, map[string][]Line{
		"a.go":               {{N: 3, Text: "// A does a."}, {N: 4, Text: "func A() { println() }"}},
		"new dir/b \"q\".go": {{N: 1, Text: "package b"}, {N: 2, Text: "func B() {}"}},
	}, lines)
}
