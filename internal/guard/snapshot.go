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
	"maps"
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
// ChangedFiles compares with one `git ls-files` walk of the tree and one
// lstat per file; only files whose stat data changed (or changed too close
// to the start to trust it) are read and hashed. A Tracker made from the
// snapshot compares with one git status instead.
type Snapshot struct {
	Taken    time.Time
	Excludes string               // the ignore patterns in force at the start, as one top-level exclude file
	Files    map[string]FileState // every file not ignored at the start, by path relative to the root
	Meta     map[string]string    // git's own files, by name (".git/config"), to a content hash
	// CommonDir and GitDir are where git's own files were at the start, so
	// that ChangedMeta can read them without asking git.
	CommonDir, GitDir string
	// Top is the root of the working tree; ObjectFormat the repository's
	// (sha1 or sha256), which content hashes are computed in.
	Top, ObjectFormat string
	// Index is the user's index at the start, with the assume-unchanged
	// and skip-worktree bits that could hide a change cleared (Tracker's
	// private index); HasIndex says it was taken (an index may be empty).
	// Sparse lists the skip-worktree entries with no file at the start,
	// which keep their bit (git status would report each as deleted) and
	// are looked at by name.
	Index    []byte
	HasIndex bool
	Sparse   []string
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
	paths, err := gitPaths(ctx, dir)
	if err != nil {
		return nil, err
	}
	top := paths.top
	snap := &Snapshot{Taken: time.Now(), Top: top}
	snap.CommonDir, snap.GitDir, snap.ObjectFormat = paths.common, paths.own, paths.format
	// git's own files are read while git lists the ignore files.
	meta := make(chan error, 1)
	go func() {
		var err error
		snap.Meta, err = metaFiles(snap.CommonDir, snap.GitDir)
		meta <- err
	}()
	snap.Excludes, err = startExcludes(ctx, top, paths.exclude)
	if merr := <-meta; merr != nil {
		return nil, merr
	}
	if err != nil {
		return nil, err
	}
	// The user's own index, at the start, names the tracked files: those
	// count whatever the ignore rules say.
	files, err := snap.takeIndex(ctx, paths.index)
	if err != nil {
		return nil, err
	}
	hashes := newHashCache(snap.ObjectFormat)
	if snap.Files, err = stateOf(ctx, top, files, nil, hashes); err != nil {
		return nil, fmt.Errorf("take the snapshot of %s: %w", top, err)
	}
	// The files of each checked-out submodule, which git lists as one path.
	inside, err := stateOf(ctx, top, filesIn(top, submoduleDirs(snap.Files)), nil, hashes)
	if err != nil {
		return nil, fmt.Errorf("take the snapshot of %s: %w", top, err)
	}
	maps.Copy(snap.Files, inside)
	embedded, err := embeddedMeta(top, submoduleDirs(snap.Files))
	if err != nil {
		return nil, err
	}
	maps.Copy(snap.Meta, embedded)
	return snap, nil
}

// takeIndex copies the user's index (at realIndex) into the snapshot,
// clears in the copy every bit that hides a change of a file from git
// status, and lists, in the same git command, the files of the tree: those
// the index tracks and those the start's ignore rules leave in.
func (s *Snapshot) takeIndex(ctx context.Context, realIndex string) ([]string, error) {
	tmp, err := privateTemp(s.Top, s.GitDir)
	if err != nil {
		return nil, fmt.Errorf("take the snapshot of %s: %w", s.Top, err)
	}
	defer os.RemoveAll(tmp)
	excl := filepath.Join(tmp, "exclude")
	if err := os.WriteFile(excl, []byte(selfExcluded(s.Top, tmp, s.Excludes)), 0o600); err != nil {
		return nil, fmt.Errorf("take the snapshot of %s: %w", s.Top, err)
	}
	index := filepath.Join(tmp, "index")
	if err := copyFile(realIndex, index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("take the snapshot of %s: copy the index %s: %w", s.Top, realIndex, err)
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	out, err := gitCmd{dir: s.Top, env: env, args: []string{"ls-files", "-z", "-v", "--cached", "--others", "--exclude-from=" + excl}}.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", s.Top, err)
	}
	var files, assumed, skipped []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) < 3 {
			continue
		}
		tag, p := rec[0], strings.TrimSuffix(string(rec[2:]), "/")
		files = append(files, p)
		switch {
		case tag == '?':
		case tag == 'S' || tag == 's':
			// A skip-worktree entry with no file is a sparse checkout's:
			// it keeps its bit, and is watched by name.
			if _, err := os.Lstat(filepath.Join(s.Top, filepath.FromSlash(p))); err == nil {
				skipped = append(skipped, p)
			} else {
				s.Sparse = append(s.Sparse, p)
			}
			if tag == 's' {
				assumed = append(assumed, p)
			}
		case tag >= 'a' && tag <= 'z':
			assumed = append(assumed, p)
		}
	}
	// update-index takes one of these flags at a time.
	for _, clear := range []struct {
		flag  string
		paths []string
	}{{"--no-assume-unchanged", assumed}, {"--no-skip-worktree", skipped}} {
		if len(clear.paths) == 0 {
			continue
		}
		in := strings.Join(clear.paths, "\x00") + "\x00"
		c := gitCmd{dir: s.Top, env: env, args: []string{"update-index", clear.flag, "-z", "--stdin"}, stdin: strings.NewReader(in)}
		if _, err := c.run(ctx); err != nil {
			return nil, fmt.Errorf("take the snapshot of %s: %w", s.Top, err)
		}
	}
	if s.Index, err = os.ReadFile(index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("take the snapshot of %s: %w", s.Top, err)
	}
	s.HasIndex = true
	slices.Sort(files)
	return slices.Compact(files), nil
}

// privateTemp makes a temporary directory for runr's own files about the
// working tree at top: in the system's temporary directory, unless that
// lies inside the tree, where a git status read at the same time (the
// start's dirty check) would list them; then in the git dir, which git
// never lists.
func privateTemp(top, gitDir string) (string, error) {
	base := os.TempDir()
	// Compared with their symlinks resolved: git gives the root so, and
	// TMPDIR may name the same place through a link.
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		real = base
	}
	if realTop, err := filepath.EvalSymlinks(top); err == nil {
		top = realTop
	}
	if rel, err := filepath.Rel(top, real); gitDir != "" && (err != nil || rel == "." || filepath.IsLocal(rel)) {
		base = gitDir
		removeStaleTemps(gitDir)
	}
	return os.MkdirTemp(base, "runr-guard-")
}

// staleTemp is how old a temporary directory of runr's in a git dir must
// be before another runr removes it: a snapshot's lives for milliseconds,
// so one this old was left by a runr killed while it took one.
const staleTemp = time.Minute

// removeStaleTemps removes the temporary directories privateTemp left in
// gitDir that are older than staleTemp. Best effort.
func removeStaleTemps(gitDir string) {
	entries, err := os.ReadDir(gitDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "runr-guard-") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			os.RemoveAll(filepath.Join(gitDir, e.Name()))
		}
	}
}

// ChangedFiles returns, sorted, every path created, changed or deleted since
// the snapshot, the index and today's ignore rules notwithstanding.
func (s *Snapshot) ChangedFiles(ctx context.Context, dir string) ([]string, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, err
	}
	format := s.ObjectFormat
	if format == "" {
		// A snapshot that did not record it.
		out, err := git(ctx, top, "rev-parse", "--show-object-format")
		if err != nil {
			return nil, fmt.Errorf("find the object format of %s: %w", top, err)
		}
		format = firstLine(out)
	}
	return s.changedFiles(ctx, top, newHashCache(format))
}

// changedFiles is ChangedFiles with the root known and the hashes of an
// earlier look at hand.
func (s *Snapshot) changedFiles(ctx context.Context, top string, hashes *hashCache) ([]string, error) {
	paths, err := listFiles(ctx, top, s.Excludes)
	if err != nil {
		return nil, err
	}
	for p := range s.Files {
		paths = append(paths, p)
	}
	paths = append(paths, filesIn(top, submoduleDirs(s.Files))...)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	now, err := stateOf(ctx, top, paths, s, hashes)
	if err != nil {
		return nil, fmt.Errorf("compare %s with its snapshot: %w", top, err)
	}
	var changed []string
	for _, p := range paths {
		was, ok := s.Files[p]
		if !ok && now[p].Hash == DeletedHash {
			continue
		}
		if !ok || !unchangedSince(was.content(), now[p].content()) {
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
		paths, err := gitPaths(ctx, top)
		if err != nil {
			return nil, err
		}
		common, own = paths.common, paths.own
	}
	now, err := metaFiles(common, own)
	if err != nil {
		return nil, err
	}
	if s.Top != "" {
		embedded, err := embeddedMeta(s.Top, submoduleDirs(s.Files))
		if err != nil {
			return nil, err
		}
		maps.Copy(now, embedded)
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
// patterns leave in. It reads no index at all, so that what an agent did to
// the index cannot hide a file. Nested repositories are listed as one path.
func listFiles(ctx context.Context, top, excludes string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "runr-guard-")
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", top, err)
	}
	defer os.RemoveAll(tmp)
	excl := filepath.Join(tmp, "exclude")
	if err := os.WriteFile(excl, []byte(selfExcluded(top, tmp, excludes)), 0o600); err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", top, err)
	}
	c := gitCmd{dir: top, args: []string{"ls-files", "-z", "--others", "--exclude-from=" + excl},
		env: []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}}
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

// selfExcluded returns excludes with a pattern that keeps dir, a temporary
// directory of runr's, out of a listing, for when the temporary directory
// lies inside the working tree at top.
func selfExcluded(top, dir, excludes string) string {
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return excludes
	}
	var b strings.Builder
	for _, c := range filepath.ToSlash(rel) {
		if strings.ContainsRune(`*?[\!# `, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return excludes + "\n/" + b.String() + "/\n"
}

// stateOf returns the state of each path, or ctx's error once it ends. A path whose stat data equals
// prev's record, and which did not change close to prev's start, keeps
// prev's hash; the others are hashed (through hashes, which keeps what it
// read before).
func stateOf(ctx context.Context, top string, paths []string, prev *Snapshot, hashes *hashCache) (map[string]FileState, error) {
	out := make(map[string]FileState, len(paths))
	for i, p := range paths {
		// Hashing a large tree takes a while: a run that stopped before
		// it needed the result does not wait for the rest.
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fst, err := prev.stateOf(ctx, top, p, hashes)
		if err != nil {
			return nil, err
		}
		out[p] = fst
	}
	return out, nil
}

// stateOf is the state of one path, as the function of that name
// computes it; s may be nil.
func (s *Snapshot) stateOf(ctx context.Context, top, p string, hashes *hashCache) (FileState, error) {
	if s != nil {
		if was, ok := s.Files[p]; ok && was.Hash != DeletedHash && !isDirMarker(was.Hash) {
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(top, filepath.FromSlash(p)), &st); err == nil {
				fst := statState(&st)
				limit := s.Taken.Add(-racyWindow).UnixNano()
				if sameStat(was, fst) && fst.Mtime < limit && fst.Ctime < limit {
					return was, nil
				}
			}
		}
	}
	return hashes.state(ctx, top, p)
}

// repoPaths are where a working tree's git files are.
type repoPaths struct {
	top            string // the root of the working tree
	common, own    string // the common and own git directories
	index, exclude string // the index and info/exclude
	format         string // the object format
}

// gitPaths returns, from one git command, the root of the working tree
// that holds dir, its absolute git directories, index and exclude file,
// and its object format; or, with no process, what an earlier Locate of
// dir found, while it is current.
func gitPaths(ctx context.Context, dir string) (repoPaths, error) {
	if _, err := os.Stat(dir); err != nil {
		return repoPaths{}, fmt.Errorf("find the git repository of %s: %w", dir, err)
	}
	if paths, ok := recall(dir); ok {
		return paths, nil
	}
	return locateAll(ctx, dir)
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
	// Beside config, info and hooks: replace refs, which make git show
	// another object in place of a commit, tree or file (runr's own git
	// ignores them; the user's does not); the shallow file, which cuts a
	// commit's history as grafts do; alternates, which add object stores;
	// and a worktree's commondir, which names the git dir it shares.
	roots := []string{filepath.Join(common, "config"), filepath.Join(common, "config.worktree"),
		filepath.Join(common, "info"), filepath.Join(common, "hooks"),
		filepath.Join(common, "refs", "replace"), filepath.Join(common, "shallow"),
		filepath.Join(common, "objects", "info", "alternates"), filepath.Join(common, "objects", "info", "http-alternates")}
	if own != common {
		roots = append(roots, filepath.Join(own, "config.worktree"), filepath.Join(own, "info"), filepath.Join(own, "commondir"))
	}
	// Submodules' git dirs, absorbed under modules/: their config, hooks
	// and info, which the user's own git (a recursive status, a
	// submodule update) reads and runs.
	roots = append(roots, submoduleGitFiles(filepath.Join(common, "modules"))...)
	if h := packedReplaceRefs(common); h != "" {
		files[name(filepath.Join(common, "packed-refs"))+":refs/replace/"] = h
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
			info, err := d.Info()
			if err != nil {
				return err
			}
			h, err := metaHash(p, info)
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

// packedReplaceRefs identifies the replace refs packed-refs holds, "" for
// none: the rest of packed-refs (branches, tags) changes with the agent's
// ordinary work.
func packedReplaceRefs(common string) string {
	data, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil {
		return ""
	}
	sum := sha256.New()
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		if _, ref, ok := strings.Cut(line, " "); ok && strings.HasPrefix(ref, "refs/replace/") {
			sum.Write([]byte(line + "\n"))
			found = true
		}
	}
	if !found {
		return ""
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// metaHash identifies a file of git's own by its kind, mode and content.
func metaHash(p string, info fs.FileInfo) (string, error) {
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
func startExcludes(ctx context.Context, top, infoExclude string) (string, error) {
	var b strings.Builder
	// The config is read (a git process, kept for the run's later git
	// calls) while git lists the .gitignore files.
	type config struct {
		excludesFile string
		err          error
	}
	read := make(chan config, 1)
	go func() {
		f, err := coreExcludesFile(ctx, top)
		read <- config{f, err}
	}()
	out, lsErr := git(ctx, top, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ":(glob)**/.gitignore")
	cfg := <-read
	if cfg.err != nil {
		return "", cfg.err
	}
	if lsErr != nil {
		return "", fmt.Errorf("find the .gitignore files of %s: %w", top, lsErr)
	}
	excludesFile := cfg.excludesFile
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
	for _, f := range []string{excludesFile, infoExclude} {
		if f == "" {
			continue
		}
		if data, err := os.ReadFile(f); err == nil {
			b.Write(data)
			b.WriteByte('\n')
		}
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
