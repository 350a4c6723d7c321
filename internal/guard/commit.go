package guard

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // git's object ids, not a security measure
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Identity runr commits as when git has none configured.
const (
	FallbackName  = "runr"
	FallbackEmail = "runr@localhost"
)

// AddWorktree checks out a new branch at HEAD of repo into path, as
// `git worktree add -b branch path HEAD`. A repository with no commits has no
// HEAD to branch from, which is ErrNoCommits.
func AddWorktree(ctx context.Context, repo, path, branch string) error {
	head, err := Head(ctx, repo)
	if err != nil {
		return err
	}
	if head == "" {
		return fmt.Errorf("create worktree %s: %w: commit once in %s, then run again", path, ErrNoCommits, repo)
	}
	if _, err := git(ctx, repo, "worktree", "add", "--quiet", "-b", branch, path, "HEAD"); err != nil {
		return fmt.Errorf("create worktree %s on new branch %s: %w", path, branch, err)
	}
	return nil
}

// Worktrees lists the paths of the working trees git knows for the
// repository of dir (`git worktree list`), the main one first.
func Worktrees(ctx context.Context, dir string) ([]string, error) {
	out, err := git(ctx, dir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("list the worktrees of %s: %w", dir, err)
	}
	var paths []string
	for _, line := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			paths = append(paths, filepath.FromSlash(p))
		}
	}
	return paths, nil
}

// CommitAll stages every change of the working tree at dir (git add --all),
// except the exclude paths (relative to the repository root; changes already
// staged for them stay staged), and commits with message. Files git cannot
// add (unreadable ones, names git refuses) stay out of the commit, untracked. It returns the new
// commit, or "" when there was nothing to commit. The commit runs no hooks and
// is not signed, whatever the git config says. When git has no user.name or
// user.email, the commit is made as runr <runr@localhost> through -c options
// for this command only; the user's git config is never written.
func CommitAll(ctx context.Context, dir, message string, exclude []string) (string, error) {
	return CommitJudged(ctx, dir, message, exclude, nil)
}

// IgnoredAtStart is what a judged function of CommitJudged gives for a path
// the ignore rules of the run's start ignored: the guard does not judge it,
// and the commit leaves it out.
const IgnoredAtStart = "ignored at the start"

// ErrChangedAfterLook: a file differs from what the guard judged, so the
// commit that would hold it was not made.
var ErrChangedAfterLook = errors.New("changed after the guard looked")

// CommitJudged is CommitAll for a tree the guard judged: judged gives, for
// each path, its content as the guard last saw it (a Tracker's Judged), and
// the commit holds exactly that. Each file is stored as its bytes are, read
// by runr (no filter or end-of-line conversion the repository's attributes
// ask for), and a path whose content, mode or kind now differs from what
// was judged (a process still running wrote it after the look) makes no
// commit: the error wraps ErrChangedAfterLook and names the path. A nil
// judged stores what git add stores.
//
// The changes are staged in a copy of the index, committed with git's
// plumbing (no hook, no status, no signing), and the copy then replaces the
// index, so a commit that is not made leaves the index as it was.
func CommitJudged(ctx context.Context, dir, message string, exclude []string, judged func(string) string) (string, error) {
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return "", err
	}
	paths, err := gitPaths(ctx, top)
	if err != nil {
		return "", err
	}
	head, err := Head(ctx, top)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(paths.index), "runr-index-")
	if err != nil {
		return "", fmt.Errorf("stage the changes in %s: %w", top, err)
	}
	tmp.Close()
	index := tmp.Name()
	defer os.Remove(index)
	if err := copyInto(paths.index, index); err != nil {
		return "", fmt.Errorf("stage the changes in %s: copy the index: %w", top, err)
	}
	c := gitCmd{dir: top, env: []string{"GIT_INDEX_FILE=" + index}}
	if err := addAll(ctx, c, exclude); err != nil {
		return "", fmt.Errorf("stage the changes in %s: %w", top, err)
	}
	staged, err := stagedChanges(ctx, c, head)
	if err != nil {
		return "", err
	}
	if len(staged) == 0 {
		return "", nil
	}
	if judged != nil {
		if err := stageJudged(ctx, c, paths.format, staged, exclude, judged); err != nil {
			return "", err
		}
	}
	c.args = []string{"write-tree"}
	out, err := c.run(ctx)
	if err != nil {
		return "", fmt.Errorf("commit in %s: %w", top, err)
	}
	tree := firstLine(out)
	args, err := identityArgs(ctx, top)
	if err != nil {
		return "", err
	}
	args = append(args, "commit-tree", tree, "-m", message)
	if head != "" {
		args = append(args, "-p", head)
	}
	c.args = args
	if out, err = c.run(ctx); err != nil {
		return "", fmt.Errorf("commit in %s: %w", top, err)
	}
	sha := firstLine(out)
	old := head
	if old == "" {
		old = strings.Repeat("0", len(sha))
	}
	// HEAD moves only from the commit the new one was made on.
	if _, err := git(ctx, top, "update-ref", "-m", "commit: "+firstLine([]byte(message)), "HEAD", sha, old); err != nil {
		return "", fmt.Errorf("commit in %s: %w", top, err)
	}
	if err := os.Rename(index, paths.index); err != nil {
		return "", fmt.Errorf("commit in %s: update the index: %w", top, err)
	}
	return sha, nil
}

// stagedEntry is one path whose staged entry differs from HEAD's.
type stagedEntry struct {
	path, mode, oid string
	oldMode         string // HEAD's, "000000" for a path HEAD does not hold
}

// stagedChanges lists the entries of c's index that differ from head (all
// of them before the first commit).
func stagedChanges(ctx context.Context, c gitCmd, head string) ([]stagedEntry, error) {
	if head == "" {
		c.args = []string{"ls-files", "-z", "--stage"}
		out, err := c.run(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the staged changes in %s: %w", c.dir, err)
		}
		var entries []stagedEntry
		for _, rec := range bytes.Split(out, []byte{0}) {
			// "<mode> <oid> <stage>\t<path>"
			meta, p, ok := strings.Cut(string(rec), "\t")
			if f := strings.Fields(meta); ok && len(f) == 3 {
				entries = append(entries, stagedEntry{path: p, mode: f[0], oid: f[1], oldMode: "000000"})
			}
		}
		return entries, nil
	}
	c.args = []string{"diff-index", "--cached", "-z", "--no-renames", "--raw", head}
	out, err := c.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the staged changes in %s: %w", c.dir, err)
	}
	var entries []stagedEntry
	recs := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(recs); i += 2 {
		// ":<old mode> <new mode> <old oid> <new oid> <status>", then the path.
		f := strings.Fields(strings.TrimPrefix(string(recs[i]), ":"))
		if len(f) < 5 {
			return nil, fmt.Errorf("list the staged changes in %s: unexpected record %q", c.dir, recs[i])
		}
		entries = append(entries, stagedEntry{path: string(recs[i+1]), mode: f[1], oid: f[3], oldMode: f[0]})
	}
	return entries, nil
}

// stageJudged checks each staged entry against judged, and stages each
// regular file as its bytes are (hash-object --no-filters), with the mode
// the guard saw. Paths of exclude keep what was staged for them (the
// user's, untouched by the run).
func stageJudged(ctx context.Context, c gitCmd, format string, staged []stagedEntry, exclude []string, judged func(string) string) error {
	var files []stagedEntry
	var leave strings.Builder
	for _, e := range staged {
		if slices.Contains(exclude, e.path) {
			continue
		}
		want := judged(e.path)
		ok := false
		switch {
		case want == IgnoredAtStart && e.oldMode == "000000":
			// Not the guard's to judge, and not the commit's to take:
			// new rules let git add it.
			leave.WriteString(e.path)
			leave.WriteByte(0)
			continue
		case e.mode == "000000":
			ok = want == DeletedHash
		case e.mode == "100644" || e.mode == "100755":
			// Compared below, once the bytes are stored.
			ok = want != DeletedHash && !strings.Contains(want, ":")
			files = append(files, e)
		case e.mode == "120000":
			target, found := strings.CutPrefix(want, "symlink:")
			ok = found && blobID(format, []byte(target)) == e.oid
		case e.mode == "160000":
			ok = want == "submodule:"+e.oid
		}
		if !ok {
			return fmt.Errorf("%w: %s", ErrChangedAfterLook, e.path)
		}
	}
	if leave.Len() > 0 {
		rc := c
		rc.args, rc.stdin = []string{"update-index", "-z", "--force-remove", "--stdin"}, strings.NewReader(leave.String())
		if _, err := rc.run(ctx); err != nil {
			return fmt.Errorf("stage the changes in %s: %w", c.dir, err)
		}
	}
	if len(files) == 0 {
		return nil
	}
	var in strings.Builder
	for _, e := range files {
		in.WriteString(quotePath(e.path))
		in.WriteByte('\n')
	}
	hc := gitCmd{dir: c.dir, args: []string{"hash-object", "-w", "--no-filters", "--stdin-paths"}, stdin: strings.NewReader(in.String())}
	out, err := hc.run(ctx)
	if err != nil {
		return fmt.Errorf("store the changes in %s: %w", c.dir, err)
	}
	oids := strings.Fields(string(out))
	if len(oids) != len(files) {
		return fmt.Errorf("store the changes in %s: git hash-object gave %d ids for %d files", c.dir, len(oids), len(files))
	}
	var info strings.Builder
	for i, e := range files {
		want := judged(e.path)
		mode := "100644"
		if h, ok := strings.CutSuffix(want, executableMark); ok {
			mode, want = "100755", h
		}
		if oids[i] != want {
			return fmt.Errorf("%w: %s", ErrChangedAfterLook, e.path)
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", mode, oids[i], e.path)
	}
	c.args = []string{"update-index", "-z", "--index-info"}
	c.stdin = strings.NewReader(info.String())
	if _, err := c.run(ctx); err != nil {
		return fmt.Errorf("stage the changes in %s: %w", c.dir, err)
	}
	return nil
}

// blobID is the git id of a blob holding data, in the object format.
func blobID(format string, data []byte) string {
	var h hash.Hash
	if format == formatSHA256 {
		h = sha256.New()
	} else {
		h = sha1.New() //nolint:gosec // git's object ids
	}
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// copyInto copies the index src over dst, with src's modification time:
// git trusts an entry's stat data only when the index file is newer than
// the entry, and a copy made now would make a file rewritten in the same
// second as its entry (same size, same mtime to the second) look
// unchanged. A missing src (no index yet) removes dst, so that git starts
// from no index.
func copyInto(src, dst string) error {
	info, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return os.Remove(dst)
	}
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return err
	}
	return os.Chtimes(dst, info.ModTime(), info.ModTime())
}

// identityArgs returns -c options that supply runr's identity for whatever
// part of it git has no source for (its config, or the environment variables
// git reads before and after it).
func identityArgs(ctx context.Context, dir string) ([]string, error) {
	var args []string
	name, err := configValue(ctx, dir, "user.name")
	if err != nil {
		return nil, err
	}
	if name == "" && (os.Getenv("GIT_AUTHOR_NAME") == "" || os.Getenv("GIT_COMMITTER_NAME") == "") {
		args = append(args, "-c", "user.name="+FallbackName)
	}
	email, err := configValue(ctx, dir, "user.email")
	if err != nil {
		return nil, err
	}
	envEmail := os.Getenv("EMAIL") != "" || (os.Getenv("GIT_AUTHOR_EMAIL") != "" && os.Getenv("GIT_COMMITTER_EMAIL") != "")
	if email == "" && !envEmail {
		args = append(args, "-c", "user.email="+FallbackEmail)
	}
	return args, nil
}

// configValue reads one git config value, "" when it is unset.
func configValue(ctx context.Context, dir, key string) (string, error) {
	out, err := git(ctx, dir, "config", "--get", key)
	if exitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read git config %s in %s: %w", key, dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
