package guard

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tracker takes the snapshot of dir and returns its Tracker.
func tracker(t *testing.T, dir string) (*Snapshot, *Tracker) {
	t.Helper()
	snap, err := TakeSnapshot(context.Background(), dir)
	require.NoError(t, err)
	tr, err := snap.NewTracker(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	return snap, tr
}

func look(t *testing.T, tr *Tracker, since string, base Baseline) Look {
	t.Helper()
	l, err := tr.Look(context.Background(), since, base)
	require.NoError(t, err)
	return l
}

// TestTrackerSeesHiddenChanges: the Tracker reports what the snapshot's
// ChangedFiles reports, whatever the agent did to the index or the ignore
// rules, and its fingerprint moves with every change it reports.
func TestTrackerSeesHiddenChanges(t *testing.T) {
	t.Parallel()
	for _, tc := range hidingCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := snapRepo(t)
			head := gitT(t, dir, "rev-parse", "HEAD")
			_, tr := tracker(t, dir)
			before := look(t, tr, head, nil)
			assert.Empty(t, before.Changed)
			assert.Equal(t, head, before.Head)
			tc.do(t, dir)
			after := look(t, tr, head, nil)
			assert.Equal(t, tc.want, after.Changed)
			assert.Empty(t, after.Committed)
			if tc.want == nil {
				assert.Equal(t, before.Fingerprint, after.Fingerprint)
			} else {
				assert.NotEqual(t, before.Fingerprint, after.Fingerprint)
			}
			// A second look, with the hashes it keeps, sees the same.
			again := look(t, tr, head, nil)
			assert.Equal(t, Delta{}, again.Delta, "nothing changed since the last look")
			again.Delta = after.Delta
			assert.Equal(t, after, again)
		})
	}
}

// TestTrackerFingerprint: the fingerprint follows the tree's content, not
// the index or history, and ignored files and the run store do not count;
// the user's index is never written.
func TestTrackerFingerprint(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{".gitignore": "*.log\nbuild/\n", "a.txt": "a\n", "sub/b.txt": "b\n"})
	writeFile(t, dir, "dirty.txt", "uncommitted work\n")
	gitT(t, dir, "add", "dirty.txt")
	writeFile(t, dir, "dirty.txt", "uncommitted work, edited after staging\n")
	indexPath := filepath.Join(dir, ".git", "index")
	indexBefore, err := os.ReadFile(indexPath)
	require.NoError(t, err)
	base, err := TakeBaseline(context.Background(), dir)
	require.NoError(t, err)

	_, tr := tracker(t, dir)
	head := gitT(t, dir, "rev-parse", "HEAD")
	fp := func() string { t.Helper(); return look(t, tr, head, base).Fingerprint }
	h0 := fp()
	require.Len(t, h0, 64)
	assert.Equal(t, h0, fp(), "nothing changed")

	writeFile(t, dir, "debug.log", "ignored")
	writeFile(t, dir, "build/out.bin", "ignored")
	writeFile(t, dir, ".git/runr/runs/r1/state.json", "{}")
	assert.Equal(t, h0, fp(), "ignored files and the run store do not count")

	writeFile(t, dir, "a.txt", "a edited\n")
	h1 := fp()
	assert.NotEqual(t, h0, h1, "an edit changes the fingerprint")
	writeFile(t, dir, "a.txt", "a edited again\n")
	assert.NotEqual(t, h1, fp(), "so does a second edit")
	writeFile(t, dir, "a.txt", "a\n")
	assert.Equal(t, h0, fp(), "the fingerprint follows content, not history")

	writeFile(t, dir, "dirty.txt", "more\n")
	assert.NotEqual(t, h0, fp(), "an edit of a file dirty at the start counts")
	writeFile(t, dir, "dirty.txt", "uncommitted work, edited after staging\n")
	assert.Equal(t, h0, fp())

	writeFile(t, dir, "sub/new file.txt", "new\n")
	h2 := fp()
	assert.NotEqual(t, h0, h2, "a new untracked file changes it")
	require.NoError(t, os.Remove(filepath.Join(dir, "sub", "new file.txt")))
	require.NoError(t, os.Remove(filepath.Join(dir, "sub", "b.txt")))
	assert.NotEqual(t, h0, fp(), "a deletion changes it")
	writeFile(t, dir, "sub/b.txt", "b\n")
	assert.Equal(t, h0, fp())

	indexAfter, err := os.ReadFile(indexPath)
	require.NoError(t, err)
	assert.Equal(t, indexBefore, indexAfter, "the real index is left byte-identical")

	gitT(t, dir, "add", "--all")
	assert.Equal(t, h0, fp(), "staging changes the index, not the tree")
	gitT(t, dir, "commit", "--quiet", "-m", "all")
	l := look(t, tr, head, base)
	assert.Equal(t, h0, l.Fingerprint, "committing changes history, not the tree")
	assert.Equal(t, gitT(t, dir, "rev-parse", "HEAD"), l.Head)
	assert.Empty(t, l.Changed, "the start's content is the reference, not HEAD")
	assert.Empty(t, l.Committed, "the commit took the start's work unchanged")
}

// TestTrackerCommitted: commits made since the given one are listed as
// CommittedChanges lists them, and looked up again only when HEAD or the
// given commit moves.
func TestTrackerCommitted(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a.txt": "a\n"})
	start := gitT(t, dir, "rev-parse", "HEAD")
	_, tr := tracker(t, dir)
	commitFiles(t, dir, map[string]string{"b.txt": "b\n", "a.txt": "a2\n"})
	l := look(t, tr, start, nil)
	assert.Equal(t, []string{"a.txt", "b.txt"}, l.Committed)
	assert.Equal(t, []string{"a.txt", "b.txt"}, l.Changed, "the tree differs from the start too")
	now := gitT(t, dir, "rev-parse", "HEAD")
	l = look(t, tr, now, nil)
	assert.Empty(t, l.Committed, "nothing since HEAD")
	commitFiles(t, dir, map[string]string{"c.txt": "c\n"})
	assert.Equal(t, []string{"c.txt"}, look(t, tr, now, nil).Committed)
}

// TestTrackerWithoutCommits: a repository with no commit and no index.
func TestTrackerWithoutCommits(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	_, tr := tracker(t, dir)
	l := look(t, tr, "", nil)
	assert.Empty(t, l.Head)
	assert.Empty(t, l.Changed)
	writeFile(t, dir, "first.txt", "1\n")
	l2 := look(t, tr, "", nil)
	assert.Equal(t, []string{"first.txt"}, l2.Changed)
	assert.NotEqual(t, l.Fingerprint, l2.Fingerprint)
	_, err := os.Stat(filepath.Join(dir, ".git", "index"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no index is created")
}

// TestTrackerSparseEntry: a skip-worktree entry with no file (a sparse
// checkout's) is no change; a file that appears there is one.
func TestTrackerSparseEntry(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a.txt": "a\n", "far/b.txt": "b\n"})
	gitT(t, dir, "update-index", "--skip-worktree", "far/b.txt")
	require.NoError(t, os.Remove(filepath.Join(dir, "far", "b.txt")))
	_, tr := tracker(t, dir)
	assert.Empty(t, look(t, tr, "", nil).Changed)
	writeFile(t, dir, "far/b.txt", "planted\n")
	assert.Equal(t, []string{"far/b.txt"}, look(t, tr, "", nil).Changed)
}

// TestTrackerNeverRunsRepositoryPrograms: drivers the repository's config
// gains during the run, directly or through an included file created
// later, are emptied for the Tracker's status as for every git call.
func TestTrackerNeverRunsRepositoryPrograms(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, true)
	gitT(t, dir, "config", "include.path", "../included.cfg")
	commitFiles(t, dir, map[string]string{"a.txt": "a\n", "b.md": "b\n", ".gitattributes": "*.txt filter=evil\n*.md filter=inc\n"})
	aside := t.TempDir()
	marker := filepath.Join(aside, "ran")
	prog := filepath.Join(aside, "prog.sh")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho ran >> "+marker+"\ncat\n"), 0o755))
	_, tr := tracker(t, dir)
	look(t, tr, "", nil)

	// Same sizes, so that git must read the content to compare it.
	writeFile(t, dir, "included.cfg", "[filter \"inc\"]\n\tclean = "+prog+"\n")
	writeFile(t, dir, "b.md", "B\n")
	assert.Contains(t, look(t, tr, "", nil).Changed, "b.md")
	gitT(t, dir, "config", "filter.evil.clean", prog)
	writeFile(t, dir, "a.txt", "A\n")
	assert.Contains(t, look(t, tr, "", nil).Changed, "a.txt")
	_, err := os.Stat(marker)
	assert.ErrorIs(t, err, os.ErrNotExist, "a repository program ran")
}

// TestTrackerOneGitProcess counts git processes: a look while HEAD stays
// is one git status; a moved HEAD costs its diff once.
func TestTrackerOneGitProcess(t *testing.T) {
	log := gitLogger(t)
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"a.txt": "a\n", ".gitignore": "*.log\n"})
	start := gitT(t, dir, "rev-parse", "HEAD")
	_, tr := tracker(t, dir)
	look(t, tr, start, nil) // reads the config once
	log.reset()
	for i := range 3 {
		writeFile(t, dir, "a.txt", strings.Repeat("x", i+2))
		writeFile(t, dir, "x.log", "ignored")
		look(t, tr, start, nil)
	}
	assert.Equal(t, []string{"status", "status", "status"}, log.commands())

	commitFiles(t, dir, map[string]string{"b.txt": "b\n"})
	log.reset()
	look(t, tr, start, nil)
	look(t, tr, start, nil)
	assert.Equal(t, []string{"status", "diff-tree", "status"}, log.commands())
}

// gitLog records the git commands the package runs, through a git wrapper
// first on PATH. Tests that use it cannot run in parallel.
type gitLog struct {
	t    *testing.T
	path string
}

func gitLogger(t *testing.T) *gitLog {
	real, err := exec.LookPath("git")
	require.NoError(t, err)
	bin := t.TempDir()
	l := &gitLog{t: t, path: filepath.Join(bin, "log")}
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + l.path + "\nexec " + real + " \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return l
}

func (l *gitLog) reset() { require.NoError(l.t, os.WriteFile(l.path, nil, 0o644)) }

// commands returns the git subcommand of each logged call, after its -c
// options.
func (l *gitLog) commands() []string {
	f, err := os.Open(l.path)
	require.NoError(l.t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		args := strings.Fields(sc.Text())
		for i := 0; i < len(args); i++ {
			if args[i] == "-c" {
				i++
				continue
			}
			out = append(out, args[i])
			break
		}
	}
	return out
}

// TestTrackerDelta: each look sorts what changed since the last one into
// added, modified and deleted, whatever the start had.
func TestTrackerDelta(t *testing.T) {
	t.Parallel()
	dir := snapRepo(t)
	head := gitT(t, dir, "rev-parse", "HEAD")
	files := strings.Fields(gitT(t, dir, "ls-files"))
	require.GreaterOrEqual(t, len(files), 2)
	_, tr := tracker(t, dir)
	assert.Equal(t, Delta{}, look(t, tr, head, nil).Delta)

	write := func(p, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644))
	}
	write("new.txt", "new")
	write(files[0], "changed")
	require.NoError(t, os.Remove(filepath.Join(dir, files[1])))
	assert.Equal(t, Delta{Added: []string{"new.txt"}, Modified: []string{files[0]}, Deleted: []string{files[1]}}, look(t, tr, head, nil).Delta)

	// Next tick: new.txt changes again, files[0] goes back to its start,
	// files[1] comes back with other content.
	write("new.txt", "newer")
	gitT(t, dir, "checkout", "--", files[0])
	write(files[1], "back")
	assert.Equal(t, Delta{Added: []string{files[1]}, Modified: []string{files[0], "new.txt"}}, look(t, tr, head, nil).Delta)

	require.NoError(t, os.Remove(filepath.Join(dir, "new.txt")))
	assert.Equal(t, Delta{Deleted: []string{"new.txt"}}, look(t, tr, head, nil).Delta)
}

// TestTrackerPrivateFilesCannotBeTamperedWith: the private index and
// exclude file lie where an agent can write; whatever it puts there (an
// exclude rule hiding everything, a damaged index, a symlink), the next
// look works from the start's own, and leaves an unchanged pair alone.
func TestTrackerPrivateFilesCannotBeTamperedWith(t *testing.T) {
	t.Parallel()
	dir := snapRepo(t)
	head := gitT(t, dir, "rev-parse", "HEAD")
	_, tr := tracker(t, dir)
	look(t, tr, head, nil)
	idx, err := os.Stat(tr.index)
	require.NoError(t, err)
	look(t, tr, head, nil)
	again, err := os.Stat(tr.index)
	require.NoError(t, err)
	assert.True(t, os.SameFile(idx, again), "an unchanged private index is not written anew")

	writeFile(t, dir, "src/b.go", "package a\n")
	require.NoError(t, os.WriteFile(tr.excludes, []byte("*\n"), 0o644))
	assert.Equal(t, []string{"src/b.go"}, look(t, tr, head, nil).Changed, "an exclude rule planted between looks")

	writeFile(t, dir, "src/c.go", "package a\n")
	require.NoError(t, os.WriteFile(tr.index, []byte("DIRC garbage"), 0o644))
	assert.Equal(t, []string{"src/b.go", "src/c.go"}, look(t, tr, head, nil).Changed, "a damaged private index")

	outside := filepath.Join(t.TempDir(), "index")
	require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
	require.NoError(t, os.Remove(tr.index))
	require.NoError(t, os.Symlink(outside, tr.index))
	assert.Equal(t, []string{"src/b.go", "src/c.go"}, look(t, tr, head, nil).Changed, "a symlink in place of the index")
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b), "the symlink's target is untouched")
}

// TestTrackerSeesAnotherRepositoryDir: a filter the agent makes git read
// through .git/commondir (pointing at a copy of .git with a filter in its
// config) is overridden in the Tracker's next git status.
func TestTrackerSeesAnotherRepositoryDir(t *testing.T) {
	t.Parallel()
	dir := snapRepo(t)
	head := gitT(t, dir, "rev-parse", "HEAD")
	_, tr := tracker(t, dir)
	look(t, tr, head, nil)

	marker := filepath.Join(t.TempDir(), "pwned")
	other := filepath.Join(t.TempDir(), "other.git")
	require.NoError(t, os.CopyFS(other, os.DirFS(filepath.Join(dir, ".git"))))
	cfg, err := os.ReadFile(filepath.Join(other, "config"))
	require.NoError(t, err)
	cfg = append(cfg, []byte("[filter \"evil\"]\n\tclean = sh -c 'touch "+marker+"; cat'\n")...)
	require.NoError(t, os.WriteFile(filepath.Join(other, "config"), cfg, 0o644))
	writeFile(t, dir, ".gitattributes", "* filter=evil\n")
	writeFile(t, dir, "src/a.go", "package b\n") // the same size: git hashes it to know
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "commondir"), []byte(other+"\n"), 0o644))

	look(t, tr, head, nil)
	assert.NoFileExists(t, marker, "the agent's filter ran in runr's git status")
	assert.Contains(t, tr.drivers, [2]string{"filter.evil.clean", ""}, "the config git reads now is read again, and its filter emptied")
}

// TestTrackerStartAtIsStart: the first look taken with no git process,
// from HEAD as the start's status read it, is the one Start takes with
// git status, on a clean and on a dirty start; and every look after it,
// whatever the agent hid, is the same as after Start.
func TestTrackerStartAtIsStart(t *testing.T) {
	t.Parallel()
	for _, dirty := range []bool{false, true} {
		for _, tc := range hidingCases {
			t.Run(fmt.Sprintf("dirty=%v/%s", dirty, tc.name), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				dir := snapRepo(t)
				if dirty {
					writeFile(t, dir, "src/a.go", "package a // edited\n")
					writeFile(t, dir, "notes.txt", "untracked\n")
				}
				status, err := ReadStatus(ctx, dir)
				require.NoError(t, err)
				assert.Equal(t, gitT(t, dir, "rev-parse", "HEAD"), status.Head, "the status's HEAD")
				base, err := BaselineOf(ctx, dir, status.Changes)
				require.NoError(t, err)
				snap, err := TakeSnapshot(ctx, dir)
				require.NoError(t, err)
				withGit, err := snap.NewTracker(t.TempDir())
				require.NoError(t, err)
				defer withGit.Close()
				without, err := snap.NewTracker(t.TempDir())
				require.NoError(t, err)
				defer without.Close()

				want, err := withGit.Start(ctx, base)
				require.NoError(t, err)
				got, err := without.StartAt(status.Head)
				require.NoError(t, err)
				assert.Equal(t, want, got, "the first look")

				tc.do(t, dir)
				assert.Equal(t, look(t, withGit, want.Head, base), look(t, without, got.Head, base), "the look after the change")
			})
		}
	}
}

// TestReadStatusHead: the status gives HEAD with the changes Changes
// lists, and no HEAD before the first commit.
func TestReadStatusHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := newRepo(t, true)
	writeFile(t, empty, "a.txt", "a")
	st, err := ReadStatus(ctx, empty)
	require.NoError(t, err)
	assert.Empty(t, st.Head, "no commit yet")
	assert.Equal(t, []Change{{Path: "a.txt", Kind: KindUntracked}}, st.Changes)

	commitFiles(t, empty, map[string]string{"a.txt": "a"})
	writeFile(t, empty, "a.txt", "b")
	st, err = ReadStatus(ctx, empty)
	require.NoError(t, err)
	assert.Equal(t, gitT(t, empty, "rev-parse", "HEAD"), st.Head)
	changes, err := Changes(ctx, empty)
	require.NoError(t, err)
	assert.Equal(t, changes, st.Changes)
	assert.Equal(t, []Change{{Path: "a.txt", Kind: KindModified}}, st.Changes)
}
