package guard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TreeHash returns the id of the git tree that the working tree at dir would
// commit as now: tracked files with their current content plus untracked files
// that are not ignored. Files git cannot add (unreadable ones, names git
// refuses such as "GIT~1") are not part of it, as they would not be of a
// commit. It builds the tree in a temporary index (a copy of the
// real one, so unchanged files are not re-read and sparse entries are kept) and
// never touches the real index. The same content always gives the same hash;
// any content change, new file or deletion gives a new one.
func TreeHash(ctx context.Context, dir string) (string, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return "", err
	}
	out, err := git(ctx, top, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", fmt.Errorf("find the index of %s: %w", top, err)
	}
	realIndex := filepath.FromSlash(firstLine(out))

	tmp, err := os.MkdirTemp("", "runr-index-")
	if err != nil {
		return "", fmt.Errorf("tree hash of %s: make a temporary index: %w", top, err)
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	if err := copyFile(realIndex, index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("tree hash of %s: copy the index %s: %w", top, realIndex, err)
	}

	env := []string{"GIT_INDEX_FILE=" + index}
	if err := addAll(ctx, gitCmd{dir: top, env: env}, nil); err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", top, err)
	}
	out, err = gitCmd{dir: top, env: env, args: []string{"write-tree"}}.run(ctx)
	if err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", top, err)
	}
	return firstLine(out), nil
}

// addAll stages every change of the working tree into c's index (git add
// --all), except the exclude paths (relative to the repository root). A file
// git cannot add is left out with a message on git's stderr rather than
// failing the whole add: an agent that makes an unreadable file must not make
// every later tree hash and checkpoint fail. Any other failure is an error.
func addAll(ctx context.Context, c gitCmd, exclude []string) error {
	// advice off: a nested repository is recorded as a gitlink without a hint
	// on stderr.
	c.args = []string{"-c", "advice.addEmbeddedRepo=false", "add", "--all", "--ignore-errors", "--", ":/"}
	for _, e := range exclude {
		c.args = append(c.args, ":(top,literal,exclude)"+e)
	}
	// With --ignore-errors, git exits 1 when it skipped some files and wrote
	// the index with all the others; a fatal error is 128.
	if _, err := c.run(ctx); err != nil && exitCode(err) != 1 {
		return err
	}
	return nil
}

// copyFile copies src to dst (which must not exist).
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}
