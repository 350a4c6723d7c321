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
// Keys are paths relative to the repository root; values are git blob ids
// (git hash-object), DeletedHash for a missing file, and markers for symlinks,
// directories (nested repositories) and special files.
//
// A Baseline looks at the working tree only: what is committed after it was
// taken leaves the status and is not reported by ChangedSince. CommittedSince
// covers that, given the Head taken with the baseline.
type Baseline map[string]string

// DeletedHash is a Baseline's value for a path with no file on disk.
const DeletedHash = "deleted"

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
	return base, nil
}

// BaselineOf is the Baseline of the working tree at top whose change set
// is changes (a Changes result of it, just read).
func BaselineOf(ctx context.Context, top string, changes []Change) (Baseline, error) {
	base, err := hashPaths(ctx, top, Paths(changes))
	if err != nil {
		return nil, fmt.Errorf("take the baseline of %s: %w", top, err)
	}
	return base, nil
}

// ChangedSince returns, sorted, the paths whose content now differs from the
// baseline: paths changed now that were clean at the start, paths dirty at the
// start and edited since, and paths dirty at the start that were reverted
// since. A path dirty at the start and untouched since does not count.
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
		candidates = append(candidates, p)
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

// CommittedSince returns, sorted, the paths that the commits made since
// startHead (a Head result; "" for a repository that had no commits) touched,
// both names of a rename; nil when HEAD has not moved.
func CommittedSince(ctx context.Context, dir, startHead string) ([]string, error) {
	head, err := Head(ctx, dir)
	if err != nil {
		return nil, err
	}
	return committedBetween(ctx, dir, startHead, head)
}

// committedBetween is CommittedSince with HEAD known to be head.
func committedBetween(ctx context.Context, dir, startHead, head string) ([]string, error) {
	if head == startHead || head == "" {
		return nil, nil
	}
	args := []string{"diff-tree", "-r", "-z", "--no-renames", "--name-only", startHead, head}
	if startHead == "" {
		args = []string{"ls-tree", "-r", "-z", "--name-only", head}
	}
	out, err := git(ctx, dir, args...)
	if err != nil {
		return nil, fmt.Errorf("list the files committed since %q in %s: %w", startHead, dir, err)
	}
	var paths []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, string(p))
		}
	}
	slices.Sort(paths)
	return paths, nil
}

// CommittedChanges returns, sorted, the paths that the commits made since
// since (as for CommittedSince) changed with respect to base: a path dirty at
// the start that a commit took along with the content base recorded for it
// (an agent's `git add --all` sweeping up the user's own work) is not a
// change made since the baseline, and is left out.
func CommittedChanges(ctx context.Context, dir, since string, base Baseline) ([]string, error) {
	head, err := Head(ctx, dir)
	if err != nil {
		return nil, err
	}
	return committedChanges(ctx, dir, since, head, base)
}

// committedChanges is CommittedChanges with HEAD known to be head.
func committedChanges(ctx context.Context, dir, since, head string, base Baseline) ([]string, error) {
	paths, err := committedBetween(ctx, dir, since, head)
	if err != nil || len(paths) == 0 {
		return paths, err
	}
	var dirtyAtStart []string
	for _, p := range paths {
		if _, ok := base[p]; ok {
			dirtyAtStart = append(dirtyAtStart, p)
		}
	}
	if len(dirtyAtStart) == 0 {
		return paths, nil
	}
	committed, err := headBlobs(ctx, dir, head, dirtyAtStart)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, p := range paths {
		was, ok := base[p]
		now, inHead := committed[p]
		if !inHead {
			now = DeletedHash
		}
		if ok && was == now {
			continue
		}
		changed = append(changed, p)
	}
	return changed, nil
}

// headBlobs returns the blob id at HEAD of each of paths that HEAD holds as
// a regular file; symlinks and submodules are left out, so they never equal
// a baseline's marker for them and count as changed.
func headBlobs(ctx context.Context, dir, head string, paths []string) (map[string]string, error) {
	args := []string{"ls-tree", "-r", "-z", "--full-tree", head, "--"}
	for _, p := range paths {
		args = append(args, ":(top,literal)"+p)
	}
	out, err := git(ctx, dir, args...)
	if err != nil {
		return nil, fmt.Errorf("read the committed files in %s: %w", dir, err)
	}
	blobs := make(map[string]string, len(paths))
	for _, rec := range bytes.Split(out, []byte{0}) {
		// "<mode> <type> <object>\t<path>"
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) == 3 && f[1] == "blob" && f[0] != "120000" {
			blobs[string(path)] = f[2]
		}
	}
	return blobs, nil
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
			hashes[p] = dirMarker(full)
		case !info.Mode().IsRegular():
			hashes[p] = "special:" + info.Mode().Type().String()
		case !readable(full):
			// git cannot hash what it cannot read; what can be seen of the
			// file still tells most changes apart.
			hashes[p] = fmt.Sprintf("unreadable:%d:%d", info.Size(), info.ModTime().UnixNano())
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

// readable reports whether the file at path can be opened for reading.
func readable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
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
