package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Tracker looks at a run's working tree after each agent call, against the
// run's Snapshot, with one git process: `git status` on a private copy of
// the index as it was at the start (with the bits that hide changes
// cleared), with the ignore rules of the start. What it reports is what the
// snapshot's ChangedFiles reports, and the commits made since a given one.
//
// The status lists every file whose content may differ from the start; Go
// then hashes those (keeping each hash while the file's stat data stays the
// same) and compares them with the snapshot. While no ignore rule differs
// from the start, nothing the start's rules left in can be hidden from that
// status; after a .gitignore or .git/info/exclude changed, each look also
// lists the whole tree without any index, as ChangedFiles does (one more git
// process). The repository's own config is read again, for the drivers it
// names, only when a file it was read from changed.
//
// A Tracker is used by one goroutine; Close removes its private files.
type Tracker struct {
	snap     *Snapshot
	top      string
	tmp      string
	index    string // the private index
	excludes string // the start's ignore rules, as one file
	hashes   *hashCache

	drivers       [][2]string
	driverSources map[string]string // each config file the drivers came from, to its content hash
	driversRead   bool

	last map[string]string // the content hash of each changed path at the last look

	subDirs []string // the submodules checked out at the start

	committed struct {
		since, head string
		paths       []string
		ok          bool
	}
}

// Look is what a Tracker saw.
type Look struct {
	// Head is the commit HEAD points at, "" before the first commit.
	Head string
	// Changed lists, sorted, the paths whose content differs from the
	// start: created, changed or deleted, whatever the index or the ignore
	// rules now say (those the start's rules ignored excepted).
	Changed []string
	// Committed lists, sorted, the paths the commits made since the given
	// commit changed, as CommittedChanges.
	Committed []string
	// Fingerprint identifies the content of the working tree: the same
	// content gives the same fingerprint, any change of a file that counts
	// (one Changed would list) a different one. It is not a git object id.
	Fingerprint string
	// Delta is what changed in the working tree since the Tracker's last
	// look (the first look: since the start).
	Delta Delta
}

// Delta sorts the paths whose content changed between two looks.
type Delta struct {
	Added, Modified, Deleted []string
}

// ErrNoIndexSnapshot: the snapshot was taken by a runr that did not keep
// the index, so no Tracker can work from it.
var ErrNoIndexSnapshot = errors.New("the guard snapshot holds no index")

// NewTracker prepares a Tracker for the snapshot's working tree. Its
// private files go in the directory "guard" of parent, a directory of
// runr's own outside the working tree (the run's directory), made anew:
// what an earlier runr of the run left there goes.
func (s *Snapshot) NewTracker(parent string) (*Tracker, error) {
	if !s.HasIndex || s.Top == "" {
		return nil, ErrNoIndexSnapshot
	}
	tmp := filepath.Join(parent, "guard")
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("prepare the guard of %s: %w", s.Top, err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("prepare the guard of %s: %w", s.Top, err)
	}
	return &Tracker{snap: s, top: s.Top, tmp: tmp, index: filepath.Join(tmp, "index"),
		excludes: filepath.Join(tmp, "exclude"), hashes: newHashCache(s.ObjectFormat), subDirs: submoduleDirs(s.Files)}, nil
}

// Close removes the Tracker's private files.
func (t *Tracker) Close() error {
	return os.RemoveAll(t.tmp)
}

// writePrivate writes the private index and exclude file anew, from
// memory: whatever changed them since (they lie where an agent can write)
// has no effect. A new file renamed into place replaces whatever is there,
// a symlink included, and writes nothing else.
func (t *Tracker) writePrivate() error {
	for _, f := range []struct {
		path string
		data []byte
	}{{t.index, t.snap.Index}, {t.excludes, []byte(t.snap.Excludes)}} {
		if len(f.data) == 0 && f.path == t.index {
			// No index at the start: none now either.
			if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if sameContent(f.path, f.data) {
			continue // as written last time: no new file to make
		}
		tmp, err := os.CreateTemp(t.tmp, "new-")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(f.data)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), f.path)
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return werr
		}
	}
	return nil
}

// sameContent reports whether path is a regular file (not followed if a
// symlink) holding exactly data.
func sameContent(path string, data []byte) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false
	}
	got := make([]byte, len(data)+1)
	n, err := io.ReadFull(f, got)
	// One byte more than data was asked for: the file ends where data does.
	return (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) && n == len(data) && bytes.Equal(got[:n], data)
}

// Look reads the working tree: one git status, and, when HEAD has moved
// away from since (the last commit already judged) to a commit it has not
// seen, the commits in between. base is the run's Baseline, for what the
// commits took along unchanged.
func (t *Tracker) Look(ctx context.Context, since string, base Baseline) (Look, error) {
	return t.look(ctx, &since, base)
}

// Start is the first Look, before any commit was judged: its Head is the
// commit the run starts from, and nothing is committed since.
func (t *Tracker) Start(ctx context.Context, base Baseline) (Look, error) {
	return t.look(ctx, nil, base)
}

// StartAt is Start without a git process, for a Tracker whose snapshot was
// just taken, with HEAD at head: nothing can differ from a snapshot taken a
// moment ago, so the first look is the empty one, with the fingerprint a
// look that found no change has. Nothing else may have run in the working
// tree since the snapshot. The private index is written now, as Start
// writes it: git trusts an index entry's stat data only when the index
// file is newer than the file, and one written after the agent's call
// would hide a same-size rewrite made in the second of the snapshot.
func (t *Tracker) StartAt(head string) (Look, error) {
	if err := t.writePrivate(); err != nil {
		return Look{}, fmt.Errorf("prepare the guard of %s: %w", t.top, err)
	}
	t.last = map[string]string{}
	return Look{Head: head, Fingerprint: fingerprint(nil, nil)}, nil
}

// fingerprint identifies the content of a working tree from its changed
// paths, sorted, and their content hashes.
func fingerprint(changed []string, hashes map[string]string) string {
	sum := sha256.New()
	for _, p := range changed {
		sum.Write([]byte(p))
		sum.Write([]byte{0})
		sum.Write([]byte(hashes[p]))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// look is Look; a nil since is HEAD as the status shows it.
func (t *Tracker) look(ctx context.Context, since *string, base Baseline) (Look, error) {
	if err := t.refreshDrivers(ctx); err != nil {
		return Look{}, err
	}
	if err := t.writePrivate(); err != nil {
		return Look{}, fmt.Errorf("prepare the guard of %s: %w", t.top, err)
	}
	c := gitCmd{dir: t.top, drivers: &t.drivers,
		env: []string{"GIT_INDEX_FILE=" + t.index},
		args: []string{"-c", "core.excludesFile=" + t.excludes, "-c", "status.renames=false",
			"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--ignored=matching", "--no-renames"}}
	out, err := c.run(ctx)
	if err != nil {
		if exitCode(err) > 0 {
			return Look{}, fmt.Errorf("read the status of %s: %w: %v", t.top, ErrNotRepository, err)
		}
		return Look{}, fmt.Errorf("read the status of %s: %w", t.top, err)
	}
	head, listed, ignored, err := parseLook(out)
	if err != nil {
		return Look{}, fmt.Errorf("read the status of %s: %w", t.top, err)
	}
	for _, p := range t.snap.Sparse {
		if _, err := os.Lstat(filepath.Join(t.top, filepath.FromSlash(p))); err == nil {
			listed = append(listed, p)
		}
	}
	// git's status compares content through the repository's attributes
	// (end-of-line conversion, encodings), which the agent can write: a
	// file whose stat data differs from the start is compared here, by its
	// bytes and mode, whatever the status says.
	for p, f := range t.snap.Files {
		if f.Hash == DeletedHash || isDirMarker(f.Hash) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(t.top, filepath.FromSlash(p)), &st); err != nil || !sameStatT(f, &st) {
			listed = append(listed, p)
		}
	}
	// git lists a submodule as one path and never looks inside (runr's
	// git does not recurse): its files, then and now, are read here.
	listed = append(listed, t.subDirs...)
	for p := range t.snap.Files {
		if underAny(p, t.subDirs) {
			listed = append(listed, p)
		}
	}
	listed = append(listed, filesIn(t.top, t.subDirs)...)
	slices.Sort(listed)
	listed = slices.Compact(listed)

	now := map[string]string{}
	var changed []string
	rulesChanged := t.excludeChanged()
	for _, p := range listed {
		h, diff, err := t.compare(ctx, p, base)
		if err != nil {
			return Look{}, err
		}
		if diff {
			changed = append(changed, p)
			now[p] = h
			rulesChanged = rulesChanged || path.Base(p) == ".gitignore"
		}
	}
	for _, p := range ignored {
		// A .gitignore that ignores itself shows only here.
		if path.Base(p) == ".gitignore" {
			if _, diff, err := t.compare(ctx, p, base); err != nil {
				return Look{}, err
			} else if diff {
				rulesChanged = true
			}
		}
	}
	if rulesChanged {
		// A rule of today may hide what the start's rules left in: list
		// the tree with the start's rules alone.
		hidden, err := t.snap.changedFiles(ctx, t.top, t.hashes)
		if err != nil {
			return Look{}, err
		}
		for _, p := range hidden {
			if _, ok := now[p]; !ok {
				h, _, err := t.compare(ctx, p, base)
				if err != nil {
					return Look{}, err
				}
				now[p] = h
				changed = append(changed, p)
			}
		}
		slices.Sort(changed)
	}
	var committed []string
	if since != nil {
		if committed, err = t.committedSince(ctx, *since, head, base); err != nil {
			return Look{}, err
		}
	}
	delta := t.delta(now, base)
	t.last = now
	return Look{Head: head, Changed: changed, Committed: committed, Fingerprint: fingerprint(changed, now), Delta: delta}, nil
}

// delta compares the content of the changed paths now with the last look.
// A path a look does not list has its content of the start.
func (t *Tracker) delta(now map[string]string, base Baseline) Delta {
	paths := make([]string, 0, len(now)+len(t.last))
	for p := range now {
		paths = append(paths, p)
	}
	for p := range t.last {
		if _, ok := now[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var d Delta
	for _, p := range paths {
		start := t.startHash(p, base)
		cur, ok := now[p]
		if !ok {
			cur = start
		}
		prev, ok := t.last[p]
		if !ok {
			prev = start
		}
		switch {
		case cur == prev:
		case prev == DeletedHash:
			d.Added = append(d.Added, p)
		case cur == DeletedHash:
			d.Deleted = append(d.Deleted, p)
		default:
			d.Modified = append(d.Modified, p)
		}
	}
	return d
}

// Judged is what the last look saw of each path: its content (hash, and
// the executable bit) when the look listed it as changed, else its content
// at the start. CommitJudged takes it, so a checkpoint commits exactly that.
// A path with no file at the start that the start's ignore rules ignore
// is IgnoredAtStart (a new rule may have let git add it since).
func (t *Tracker) Judged(ctx context.Context, base Baseline) func(string) string {
	last := t.last
	return func(p string) string {
		if h, ok := last[p]; ok {
			return h
		}
		h := t.startHash(p, base)
		if h == DeletedHash && t.ignoredAtStart(ctx, p) {
			return IgnoredAtStart
		}
		return h
	}
}

// ignoredAtStart reports whether the start's ignore rules ignore path p,
// with no index (a path git tracks is never ignored, but none at the
// start is asked about).
func (t *Tracker) ignoredAtStart(ctx context.Context, p string) bool {
	if err := t.writePrivate(); err != nil {
		return false
	}
	c := gitCmd{dir: t.top, env: []string{"GIT_INDEX_FILE=" + filepath.Join(t.tmp, "no-index")},
		args: []string{"ls-files", "-z", "--others", "--ignored", "--exclude-from=" + t.excludes, "--", ":(literal)" + p}}
	out, err := c.run(ctx)
	return err == nil && len(bytes.TrimRight(out, "\x00")) > 0
}

// startHash is p's content at the start: the snapshot's, else the
// baseline's, else no file.
func (t *Tracker) startHash(p string, base Baseline) string {
	if f, ok := t.snap.Files[p]; ok {
		return f.content()
	}
	if b, ok := base[p]; ok {
		return b
	}
	return DeletedHash
}

// compare returns the content hash of p now, and whether it differs from
// p's at the start: the snapshot's, else the baseline's, else no file.
func (t *Tracker) compare(ctx context.Context, p string, base Baseline) (string, bool, error) {
	fst, err := t.snap.stateOf(ctx, t.top, p, t.hashes)
	if err != nil {
		return "", false, err
	}
	was := t.startHash(p, base)
	now := fst.content()
	if _, ok := t.snap.Files[p]; !ok {
		if _, ok := base[p]; ok {
			// A baseline records content alone.
			now = fst.Hash
		}
	}
	return now, !unchangedSince(was, now), nil
}

// excludeChanged reports whether .git/info/exclude differs from the start.
func (t *Tracker) excludeChanged() bool {
	p := filepath.Join(t.snap.CommonDir, "info", "exclude")
	name := path.Join(filepath.Base(t.snap.CommonDir), "info", "exclude")
	was, existed := t.snap.Meta[name]
	info, err := os.Lstat(p)
	if err != nil {
		return existed || !errors.Is(err, fs.ErrNotExist)
	}
	h, err := metaHash(p, info)
	return err != nil || !existed || h != was
}

// committedSince is CommittedChanges for HEAD at head, kept while neither
// since nor head moves.
func (t *Tracker) committedSince(ctx context.Context, since, head string, base Baseline) ([]string, error) {
	if head == since || head == "" {
		return nil, nil
	}
	c := &t.committed
	if c.ok && c.since == since && c.head == head {
		return slices.Clone(c.paths), nil
	}
	paths, err := committedChanges(ctx, t.top, since, head, base)
	if err != nil {
		return nil, err
	}
	c.since, c.head, c.paths, c.ok = since, head, paths, true
	return slices.Clone(paths), nil
}

// refreshDrivers reads the repository's config for its drivers the first
// time, and again whenever a file it came from (or one it includes) changed.
func (t *Tracker) refreshDrivers(ctx context.Context) error {
	if t.driversRead {
		same := true
		for f, h := range t.driverSources {
			if fileHash(f) != h {
				same = false
				break
			}
		}
		if same {
			return nil
		}
	}
	over, sources, err := driverOverrides(ctx, t.top)
	if err != nil {
		return err
	}
	t.drivers, t.driverSources, t.driversRead = over, map[string]string{}, true
	for _, f := range sources {
		t.driverSources[f] = fileHash(f)
	}
	// The config files themselves, read or not: a local config created
	// or rewritten later can name drivers too.
	for _, f := range append([]string{filepath.Join(t.snap.CommonDir, "config"), filepath.Join(t.snap.CommonDir, "config.worktree"),
		filepath.Join(t.snap.GitDir, "config.worktree")}, repoLocationFiles(t.top)...) {
		if _, ok := t.driverSources[f]; !ok {
			t.driverSources[f] = fileHash(f)
		}
	}
	return nil
}

// fileHash identifies a file's content; "" for no readable file.
func fileHash(p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// parseLook parses `git status --porcelain=v2 -z --branch --ignored`: the
// commit of HEAD, every path listed as changed or untracked (both names of a
// rename), and the ignored ones. Directories lose their trailing slash.
func parseLook(out []byte) (head string, listed, ignored []string, err error) {
	records := bytes.Split(out, []byte{0})
	for i := 0; i < len(records); i++ {
		rec := string(records[i])
		if rec == "" {
			continue
		}
		switch rec[0] {
		case '#':
		case '!':
			ignored = append(ignored, strings.TrimSuffix(rec[2:], "/"))
		case '?':
			listed = append(listed, strings.TrimSuffix(rec[2:], "/"))
		case '1':
			f, err := fields(rec, 8)
			if err != nil {
				return "", nil, nil, err
			}
			listed = append(listed, f[8])
		case '2':
			f, err := fields(rec, 9)
			if err != nil {
				return "", nil, nil, err
			}
			if i+1 >= len(records) {
				return "", nil, nil, fmt.Errorf("git status: rename record for %q has no original name", f[9])
			}
			i++
			listed = append(listed, f[9], string(records[i]))
		case 'u':
			f, err := fields(rec, 10)
			if err != nil {
				return "", nil, nil, err
			}
			listed = append(listed, f[10])
		default:
			return "", nil, nil, fmt.Errorf("git status: unexpected record %q", rec)
		}
	}
	return branchOID(out), listed, ignored, nil
}
