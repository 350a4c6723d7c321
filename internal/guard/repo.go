package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// TopLevel returns the root of the working tree that contains dir.
func TopLevel(ctx context.Context, dir string) (string, error) {
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("find the git repository of %s: %w", dir, err)
	}
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		if exitCode(err) > 0 {
			return "", fmt.Errorf("%s: %w (no working tree found): run runr inside a git checkout, or run `git init` there first", dir, ErrNotRepository)
		}
		return "", err
	}
	top := firstLine(out)
	if top == "" {
		return "", fmt.Errorf("%s: %w (it is inside a .git directory or a bare repository): run runr from the working tree", dir, ErrNotRepository)
	}
	return filepath.FromSlash(top), nil
}

// Locate returns, from one git process, what TopLevel and CommonDir return
// for dir. It fails where either would (outside a working tree, inside a
// .git directory): then ask CommonDir alone. The same process finds the
// rest of the repository's git files, which TakeSnapshot in dir or at the
// root then needs no git process for, while the files through which git
// found them stay as they are.
func Locate(ctx context.Context, dir string) (top, common string, err error) {
	paths, err := locateAll(ctx, dir)
	if err != nil {
		return "", "", err
	}
	return paths.top, paths.common, nil
}

// locateAll runs the git process of Locate and remembers what it found.
func locateAll(ctx context.Context, dir string) (repoPaths, error) {
	out, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--git-dir",
		"--git-path", "index", "--git-path", "info/exclude", "--show-object-format")
	if err != nil {
		if exitCode(err) > 0 {
			return repoPaths{}, fmt.Errorf("%s: %w (no working tree found): run runr inside a git checkout, or run `git init` there first", dir, ErrNotRepository)
		}
		return repoPaths{}, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 6 || lines[0] == "" || lines[1] == "" {
		return repoPaths{}, fmt.Errorf("%s: %w (it is inside a .git directory or a bare repository): run runr from the working tree", dir, ErrNotRepository)
	}
	paths := repoPaths{top: filepath.FromSlash(lines[0]), common: filepath.FromSlash(lines[1]), own: filepath.FromSlash(lines[2]),
		index: filepath.FromSlash(lines[3]), exclude: filepath.FromSlash(lines[4]), format: lines[5]}
	remember(paths, dir)
	return paths, nil
}

// located remembers, per directory, where its repository's git files are,
// with the content of the files through which git found them
// (repoLocationFiles, at the root): a .git file rewritten, a commondir
// created or a config that moves the work tree makes the record stale.
var located struct {
	sync.Mutex
	dirs map[string]locatedPaths
}

type locatedPaths struct {
	paths  repoPaths
	hashes map[string]string
}

func remember(paths repoPaths, dirs ...string) {
	l := locatedPaths{paths: paths, hashes: map[string]string{}}
	for _, f := range repoLocationFiles(paths.top) {
		l.hashes[f] = fileHash(f)
	}
	located.Lock()
	defer located.Unlock()
	if located.dirs == nil {
		located.dirs = map[string]locatedPaths{}
	}
	for _, d := range append(dirs, paths.top) {
		located.dirs[filepath.Clean(d)] = l
	}
}

// recall is what remember kept for dir, while it is current.
func recall(dir string) (repoPaths, bool) {
	located.Lock()
	l, ok := located.dirs[filepath.Clean(dir)]
	located.Unlock()
	if !ok {
		return repoPaths{}, false
	}
	for f, h := range l.hashes {
		if fileHash(f) != h {
			return repoPaths{}, false
		}
	}
	return l.paths, true
}

// CommonDir returns the absolute git common dir of the repository that holds
// dir: the .git directory shared by all of its worktrees.
func CommonDir(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		if exitCode(err) > 0 {
			return "", fmt.Errorf("%s: %w: run runr inside a git checkout, or run `git init` there first", dir, ErrNotRepository)
		}
		return "", err
	}
	return filepath.FromSlash(firstLine(out)), nil
}

// Head returns the commit HEAD points at, or "" in a repository with no
// commits yet.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		if exitCode(err) > 1 {
			return "", fmt.Errorf("%s: %w: %v", dir, ErrNotRepository, err)
		}
		return "", err
	}
	return firstLine(out), nil
}

// IsIgnored reports whether path (relative to dir, or absolute) is ignored by
// the repository's ignore rules.
func IsIgnored(ctx context.Context, dir, path string) (bool, error) {
	_, err := git(ctx, dir, "check-ignore", "--quiet", "--", path)
	switch exitCode(err) {
	case -1:
		if err != nil {
			return false, err
		}
		return true, nil
	case 1:
		return false, nil
	default:
		return false, fmt.Errorf("check whether %s is ignored: %w", path, err)
	}
}
