package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Baseline remembers the change set of the working tree at the start of a
// run: for each changed path, a hash of its content then. ChangedSince uses it
// to judge only what changed afterwards, so that a user's own uncommitted work
// (allowed with --allow-dirty, or the task file) is never blamed on the agent.
//
// Values are git blob ids (git hash-object), DeletedHash for a missing file,
// and descriptive markers for symlinks, directories (nested repositories) and
// special files. One extra key, which no path can spell because it holds a NUL
// byte, records HEAD, so that changes the agent commits itself are still seen.
type Baseline map[string]string

// DeletedHash is a Baseline's value for a path with no file on disk.
const DeletedHash = "deleted"

// baselineHeadKey holds HEAD in a Baseline; git paths never contain NUL.
const baselineHeadKey = "\x00HEAD"

// TakeBaseline records the current change set of the working tree at dir.
func TakeBaseline(ctx context.Context, dir string) (Baseline, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	changes, err := Changes(ctx, top)
	if err != nil {
		return nil, err
	}
	base, err := hashPaths(ctx, top, Paths(changes))
	if err != nil {
		return nil, fmt.Errorf("take the baseline of %s: %w", top, err)
	}
	head, err := Head(ctx, top)
	if err != nil {
		return nil, err
	}
	base[baselineHeadKey] = head
	return base, nil
}

// ChangedSince returns, sorted, the paths whose content now differs from the
// baseline: paths changed now that were clean at the start, paths dirty at the
// start and edited since, paths dirty at the start that were reverted since,
// and paths the agent committed since the baseline. A path dirty at the start
// and untouched since does not count.
func ChangedSince(ctx context.Context, dir string, base Baseline) ([]string, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	changes, err := Changes(ctx, top)
	if err != nil {
		return nil, err
	}
	candidates := Paths(changes)
	for p := range base {
		if p != baselineHeadKey {
			candidates = append(candidates, p)
		}
	}
	if startHead, ok := base[baselineHeadKey]; ok {
		committed, err := committedSince(ctx, top, startHead)
		if err != nil {
			return nil, err
		}
		candidates = append(candidates, committed...)
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)

	now, err := hashPaths(ctx, top, candidates)
	if err != nil {
		return nil, fmt.Errorf("compare %s with its baseline: %w", top, err)
	}
	var changed []string
	for _, p := range candidates {
		if was, ok := base[p]; ok && was == now[p] {
			continue
		}
		changed = append(changed, p)
	}
	return changed, nil
}

// committedSince lists the paths that commits made after startHead touched.
func committedSince(ctx context.Context, top, startHead string) ([]string, error) {
	head, err := Head(ctx, top)
	if err != nil || head == startHead || head == "" {
		return nil, err
	}
	args := []string{"diff-tree", "-r", "-z", "--no-renames", "--name-only", startHead, head}
	if startHead == "" {
		args = []string{"ls-tree", "-r", "-z", "--name-only", head}
	}
	out, err := git(ctx, top, args...)
	if err != nil {
		return nil, fmt.Errorf("list the files committed since %s: %w", startHead, err)
	}
	var paths []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, string(p))
		}
	}
	return paths, nil
}

// hashPaths hashes the current content of each path (relative to top).
// Regular files are hashed by git in one batch; other kinds get a marker that
// changes when what they are changes.
func hashPaths(ctx context.Context, top string, paths []string) (Baseline, error) {
	hashes := make(Baseline, len(paths))
	var files []string
	for _, p := range paths {
		full := filepath.Join(top, filepath.FromSlash(p))
		info, err := os.Lstat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			hashes[p] = DeletedHash
		case err != nil:
			return nil, fmt.Errorf("inspect %s: %w", full, err)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return nil, fmt.Errorf("read symlink %s: %w", full, err)
			}
			hashes[p] = "symlink:" + target
		case info.IsDir():
			hashes[p] = "directory"
		case !info.Mode().IsRegular():
			hashes[p] = "special:" + info.Mode().Type().String()
		default:
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		return hashes, nil
	}
	var in strings.Builder
	for _, p := range files {
		in.WriteString(quotePath(p))
		in.WriteByte('\n')
	}
	out, err := gitCmd{dir: top, args: []string{"hash-object", "--no-filters", "--stdin-paths"}, stdin: strings.NewReader(in.String())}.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("hash changed files: %w", err)
	}
	ids := strings.Fields(string(out))
	if len(ids) != len(files) {
		return nil, fmt.Errorf("hash changed files: git hash-object gave %d ids for %d files", len(ids), len(files))
	}
	for i, p := range files {
		hashes[p] = ids[i]
	}
	return hashes, nil
}

// quotePath writes p in git's C-style quoting, which `git hash-object
// --stdin-paths` undoes, so that names with newlines, quotes or a leading
// double quote survive the line-based input. Other bytes, UTF-8 or not, pass
// through as they are.
func quotePath(p string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
