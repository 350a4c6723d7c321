package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// RuleGitMetadata is the rule a change to git's own program-bearing files
// breaks (Violation.Rule, and the stop's details).
const RuleGitMetadata = "git-metadata"

// Snapshot is what the working tree held at the start of a run, taken so that
// nothing an agent can change afterwards hides a change from the guards: not
// the index (assume-unchanged, skip-worktree, git rm --cached), not ignore
// rules (.gitignore, .git/info/exclude, core.excludesFile). Paths ignored at
// the start stay ignored only by the rules as they were then, kept in the
// snapshot. It also holds git's own files that can make git run programs or
// change what it shows (.git/config, .git/info/*, .git/hooks/*), which an
// agent must not touch at all.
//
// Comparing costs one `git ls-files` walk of the tree and one lstat per file;
// only files whose stat data changed (or changed too close to the start to
// trust it) are read and hashed.
type Snapshot struct {
	Taken    time.Time
	Excludes string               // the ignore patterns in force at the start, as one top-level exclude file
	Files    map[string]FileState // every file not ignored at the start, by path relative to the root
	Meta     map[string]string    // git's own files, by name (".git/config"), to a content hash
	// CommonDir and GitDir are where git's own files were at the start, so
	// that ChangedMeta can read them without asking git.
	CommonDir, GitDir string
}

// FileState is a file's content hash (as Baseline spells it) and the stat
// data that tells, without reading the file, that it has not changed.
type FileState struct {
	Hash  string
	Size  int64
	Mtime int64
	Ctime int64
	Ino   uint64
	Mode  uint32
}

// racyWindow: a file changed this close to the snapshot may change again
// within the file system's timestamp granularity without its stat data
// showing it, so its content is always compared.
const racyWindow = 2 * time.Second

// TakeSnapshot records the working tree at dir and git's own files.
func TakeSnapshot(ctx context.Context, dir string) (*Snapshot, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Taken: time.Now()}
	if snap.CommonDir, snap.GitDir, err = gitDirs(ctx, top); err != nil {
		return nil, err
	}
	if snap.Meta, err = metaFiles(snap.CommonDir, snap.GitDir); err != nil {
		return nil, err
	}
	if snap.Excludes, err = startExcludes(ctx, top); err != nil {
		return nil, err
	}
	// The user's own index, at the start, names the tracked files: those
	// count whatever the ignore rules say.
	paths, err := listFiles(ctx, top, snap.Excludes, false)
	if err != nil {
		return nil, err
	}
	if snap.Files, err = stateOf(ctx, top, paths, nil); err != nil {
		return nil, fmt.Errorf("take the snapshot of %s: %w", top, err)
	}
	return snap, nil
}

// ChangedFiles returns, sorted, every path created, changed or deleted since
// the snapshot, the index and today's ignore rules notwithstanding.
func (s *Snapshot) ChangedFiles(ctx context.Context, dir string) ([]string, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	paths, err := listFiles(ctx, top, s.Excludes, true)
	if err != nil {
		return nil, err
	}
	for p := range s.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	now, err := stateOf(ctx, top, paths, s)
	if err != nil {
		return nil, fmt.Errorf("compare %s with its snapshot: %w", top, err)
	}
	var changed []string
	for _, p := range paths {
		was, ok := s.Files[p]
		if !ok && now[p].Hash == DeletedHash {
			continue
		}
		if !ok || was.Hash != now[p].Hash {
			changed = append(changed, p)
		}
	}
	return changed, nil
}

// ChangedMeta returns, sorted, the names of git's own files (".git/config",
// ".git/hooks/post-index-change") created, changed or deleted since the
// snapshot. With the git dirs the snapshot recorded it runs no git, so it
// can be asked before any git call that such a file could subvert.
func (s *Snapshot) ChangedMeta(ctx context.Context, dir string) ([]string, error) {
	common, own := s.CommonDir, s.GitDir
	if common == "" {
		// A snapshot that did not record them: ask git once.
		top, err := TopLevel(ctx, dir)
		if err != nil {
			return nil, err
		}
		if common, own, err = gitDirs(ctx, top); err != nil {
			return nil, err
		}
	}
	now, err := metaFiles(common, own)
	if err != nil {
		return nil, err
	}
	var changed []string
	for name, h := range now {
		if s.Meta[name] != h {
			changed = append(changed, name)
		}
	}
	for name := range s.Meta {
		if _, ok := now[name]; !ok {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// Encode encodes the snapshot for the run store to keep.
func (s *Snapshot) Encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return nil, fmt.Errorf("encode the guard snapshot: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeSnapshot decodes what Encode encoded.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	var s Snapshot
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
		return nil, fmt.Errorf("read the guard snapshot: %w (it is damaged; the run cannot be guarded as it started)", err)
	}
	return &s, nil
}

// listFiles lists the files of the working tree at top that the exclude
// patterns leave in. With emptyIndex it reads no index at all, so that what
// an agent did to the index cannot hide a file; else the real index's
// entries come too, whatever the patterns say. Nested repositories are
// listed as one path.
func listFiles(ctx context.Context, top, excludes string, emptyIndex bool) ([]string, error) {
	tmp, err := os.MkdirTemp("", "runr-guard-")
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", top, err)
	}
	defer os.RemoveAll(tmp)
	excl := filepath.Join(tmp, "exclude")
	if err := os.WriteFile(excl, []byte(excludes), 0o600); err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", top, err)
	}
	c := gitCmd{dir: top, args: []string{"ls-files", "-z", "--others", "--exclude-from=" + excl}}
	if emptyIndex {
		c.env = []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	} else {
		c.args = append(c.args, "--cached")
	}
	out, err := c.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", top, err)
	}
	var paths []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, strings.TrimSuffix(string(p), "/"))
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// stateOf returns the state of each path. A path whose stat data equals
// prev's record, and which did not change close to prev's start, keeps
// prev's hash; the others are hashed.
func stateOf(ctx context.Context, top string, paths []string, prev *Snapshot) (map[string]FileState, error) {
	out := make(map[string]FileState, len(paths))
	var rehash []string
	for _, p := range paths {
		full := filepath.Join(top, filepath.FromSlash(p))
		var st unix.Stat_t
		err := unix.Lstat(full, &st)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			out[p] = FileState{Hash: DeletedHash}
			continue
		case err != nil:
			return nil, fmt.Errorf("inspect %s: %w", full, err)
		}
		fst := FileState{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino, Mode: uint32(st.Mode)}
		if prev != nil {
			was, ok := prev.Files[p]
			limit := prev.Taken.Add(-racyWindow).UnixNano()
			if ok && was.Size == fst.Size && was.Mtime == fst.Mtime && was.Ctime == fst.Ctime && was.Ino == fst.Ino &&
				was.Mode == fst.Mode && fst.Mtime < limit && fst.Ctime < limit {
				out[p] = was
				continue
			}
		}
		out[p] = fst
		rehash = append(rehash, p)
	}
	hashes, err := hashPaths(ctx, top, rehash)
	if err != nil {
		return nil, err
	}
	for _, p := range rehash {
		fst := out[p]
		fst.Hash = hashes[p]
		out[p] = fst
	}
	return out, nil
}

// gitDirs returns the absolute common and own git directories of the
// working tree at top.
func gitDirs(ctx context.Context, top string) (common, own string, err error) {
	out, err := git(ctx, top, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir")
	if err != nil {
		return "", "", fmt.Errorf("find the git dir of %s: %w", top, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("find the git dir of %s: unexpected output %q", top, out)
	}
	return filepath.FromSlash(lines[0]), filepath.FromSlash(lines[1]), nil
}

// metaFiles hashes git's own files that can start programs or change what
// git shows: config (and config.worktree), everything under info/ and
// hooks/, of the common dir and of the worktree's own git dir. Names are
// ".git/..." for the common dir, else the absolute path. It runs no git.
func metaFiles(common, own string) (map[string]string, error) {
	name := func(full string) string {
		if rel, err := filepath.Rel(common, full); err == nil && !strings.HasPrefix(rel, "..") {
			return path.Join(filepath.Base(common), filepath.ToSlash(rel))
		}
		return full
	}
	files := map[string]string{}
	roots := []string{filepath.Join(common, "config"), filepath.Join(common, "config.worktree"),
		filepath.Join(common, "info"), filepath.Join(common, "hooks")}
	if own != common {
		roots = append(roots, filepath.Join(own, "config.worktree"), filepath.Join(own, "info"))
	}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			h, err := metaHash(p, d)
			if err != nil {
				return err
			}
			files[name(p)] = h
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read git's own files in %s: %w", common, err)
		}
	}
	return files, nil
}

// metaHash identifies a file of git's own by its kind, mode and content.
func metaHash(p string, d fs.DirEntry) (string, error) {
	info, err := d.Info()
	if err != nil {
		return "", err
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		return "symlink:" + target, err
	case !info.Mode().IsRegular():
		return "special:" + info.Mode().Type().String(), nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Sprintf("unreadable:%d:%d", info.Size(), info.ModTime().UnixNano()), nil
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s:%s", info.Mode().Perm(), hex.EncodeToString(sum[:])), nil
}

// startExcludes gathers the ignore rules in force now into one exclude file
// whose patterns are relative to the root, in git's order of precedence (a
// later match wins): core.excludesFile, .git/info/exclude, then each
// .gitignore, shallower first, its patterns rewritten to apply only below
// its own directory.
func startExcludes(ctx context.Context, top string) (string, error) {
	var b strings.Builder
	excludesFile, err := configValue(ctx, top, "core.excludesFile")
	if err != nil {
		return "", err
	}
	if excludesFile == "" {
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
			excludesFile = filepath.Join(x, "git", "ignore")
		} else if h, err := os.UserHomeDir(); err == nil {
			excludesFile = filepath.Join(h, ".config", "git", "ignore")
		}
	} else if rest, ok := strings.CutPrefix(excludesFile, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			excludesFile = filepath.Join(h, rest)
		}
	}
	out, err := git(ctx, top, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
	if err != nil {
		return "", fmt.Errorf("find the exclude file of %s: %w", top, err)
	}
	for _, f := range []string{excludesFile, filepath.FromSlash(firstLine(out))} {
		if f == "" {
			continue
		}
		if data, err := os.ReadFile(f); err == nil {
			b.Write(data)
			b.WriteByte('\n')
		}
	}
	out, err = git(ctx, top, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ":(glob)**/.gitignore")
	if err != nil {
		return "", fmt.Errorf("find the .gitignore files of %s: %w", top, err)
	}
	var ignores []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			ignores = append(ignores, string(p))
		}
	}
	slices.SortFunc(ignores, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, p := range ignores {
		data, err := os.ReadFile(filepath.Join(top, filepath.FromSlash(p)))
		if err != nil {
			continue
		}
		dir := path.Dir(p)
		for _, line := range strings.Split(string(data), "\n") {
			b.WriteString(anchorPattern(dir, strings.TrimSuffix(line, "\r")))
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// anchorPattern rewrites a .gitignore line of directory dir as a pattern of a
// top-level exclude file that means the same: one with a slash before its
// end is relative to dir, one without matches at any depth below dir.
func anchorPattern(dir, line string) string {
	if dir == "." || line == "" || strings.HasPrefix(line, "#") {
		return line
	}
	neg := ""
	if strings.HasPrefix(line, "!") {
		neg, line = "!", line[1:]
	}
	if strings.Contains(strings.TrimSuffix(line, "/"), "/") {
		return neg + "/" + dir + "/" + strings.TrimPrefix(line, "/")
	}
	return neg + "/" + dir + "/**/" + line
}
