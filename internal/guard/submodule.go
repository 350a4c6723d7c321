package guard

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A directory that git lists as one path is a submodule (a gitlink in the
// index) or a nested repository. git does not look into it for the guard
// (runr's git never recurses into a submodule, whose config and attributes
// the agent writes), so the guard reads it itself: the directory's own
// marker names the commit its HEAD points at, read from its git dir's files
// without running git, and each file inside is a path of its own
// ("deps/lib/lib.go"), hashed and judged like any other.

// dirMarker identifies the directory at full: its HEAD commit for a
// repository of its own, else the plain marker.
func dirMarker(full string) string {
	gitDir, ok := nestedGitDir(full)
	if !ok {
		return "directory"
	}
	return "submodule:" + readHead(gitDir)
}

// isDirMarker reports whether h is dirMarker's.
func isDirMarker(h string) bool {
	return h == "directory" || strings.HasPrefix(h, "submodule:")
}

// nestedGitDir is the git dir of the repository whose work tree is dir: its
// .git directory, or the one its .git file names.
func nestedGitDir(dir string) (string, bool) {
	dotgit := filepath.Join(dir, ".git")
	info, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return "", false
	case info.IsDir():
		return dotgit, true
	case !info.Mode().IsRegular():
		return "", true
	}
	data, err := readSmall(dotgit)
	if err != nil {
		return "", true
	}
	p, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return "", true
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p, true
}

// readHead is the commit the HEAD of gitDir points at, "?" when it cannot
// be read: a detached HEAD's id, or its branch's, from the loose ref file or
// packed-refs of the git dir or its common dir. Only files are read; no
// program the repository names can run.
func readHead(gitDir string) string {
	if gitDir == "" {
		return "?"
	}
	head, err := readSmall(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "?"
	}
	common := gitDir
	if data, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	ref := strings.TrimSpace(string(head))
	for range 5 { // a symbolic ref may name another; git stops at 5 too
		name, ok := strings.CutPrefix(ref, "ref: ")
		if !ok {
			return ref
		}
		name = path.Clean(name)
		if !strings.HasPrefix(name, "refs/") {
			return "?"
		}
		var next []byte
		for _, d := range []string{gitDir, common} {
			if next, err = readSmall(filepath.Join(d, filepath.FromSlash(name))); err == nil {
				break
			}
		}
		if err != nil {
			return packedRef(common, name)
		}
		ref = strings.TrimSpace(string(next))
	}
	return "?"
}

// packedRef is the id packed-refs gives ref, "?" when none.
func packedRef(common, ref string) string {
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref {
			return id
		}
	}
	return "?"
}

// readSmall reads a small file of a git dir, at most 4 KiB: a ref, HEAD,
// a .git file. A symlink or special file is not followed.
func readSmall(p string) ([]byte, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return nil, err
	}
	return buf[:n], nil
}

// submoduleDirs are the paths of files whose state is a repository of its
// own (dirMarker's "submodule:").
func submoduleDirs(files map[string]FileState) []string {
	var dirs []string
	for p, f := range files {
		if strings.HasPrefix(f.Hash, "submodule:") {
			dirs = append(dirs, p)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// filesIn lists, relative to top, every file under each directory of dirs
// (relative to top), leaving out the repository's own .git entry at each
// directory's root and at the root of any repository nested further, whose
// marker stands for it. Entries that cannot be read are left out: the
// directory's marker still changes with its HEAD.
func filesIn(top string, dirs []string) []string {
	var out []string
	for _, d := range dirs {
		root := filepath.Join(top, filepath.FromSlash(d))
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if e != nil && e.IsDir() && p != root {
					return fs.SkipDir
				}
				return nil
			}
			if p == root {
				return nil
			}
			rel, rerr := filepath.Rel(top, p)
			if rerr != nil {
				return nil
			}
			if e.Name() == ".git" {
				if e.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if e.IsDir() {
				if _, nested := nestedGitDir(p); nested {
					// A repository nested further: its marker, then
					// its files, as for the first.
					out = append(out, filepath.ToSlash(rel))
				}
				return nil
			}
			out = append(out, filepath.ToSlash(rel))
			return nil
		})
	}
	slices.Sort(out)
	return out
}

// underAny reports whether path p lies under one of dirs.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// submoduleGitFiles lists, under a git dir's modules directory, the files
// and directories of each submodule's git dir that can make git run
// programs: config, config.worktree, hooks and info (submodules nest, so
// at any depth).
func submoduleGitFiles(modules string) []string {
	var out []string
	_ = filepath.WalkDir(modules, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		switch e.Name() {
		case "objects", "refs", "logs":
			if e.IsDir() {
				return fs.SkipDir
			}
		case "config", "config.worktree":
			if !e.IsDir() {
				out = append(out, p)
			}
		case "hooks", "info":
			if e.IsDir() {
				out = append(out, p)
				return fs.SkipDir
			}
		}
		return nil
	})
	return out
}

// embeddedMeta hashes, for each submodule checked out at dirs (relative to
// top), its .git entry (a file naming its git dir, or the git dir itself)
// and, for a git dir embedded in the work tree, the files of it that can
// make git run programs, by their path in the work tree
// ("deps/lib/.git/config"). The agent writes the work tree, so these are
// its to change without touching the repository's own git dir.
func embeddedMeta(top string, dirs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range dirs {
		dotgit := filepath.Join(top, filepath.FromSlash(d), ".git")
		info, err := os.Lstat(dotgit)
		if err != nil {
			out[d+"/.git"] = DeletedHash
			continue
		}
		if !info.IsDir() {
			h, err := metaHash(dotgit, info)
			if err != nil {
				return nil, err
			}
			out[d+"/.git"] = h
			continue
		}
		roots := append([]string{filepath.Join(dotgit, "config"), filepath.Join(dotgit, "config.worktree"),
			filepath.Join(dotgit, "hooks"), filepath.Join(dotgit, "info")}, submoduleGitFiles(filepath.Join(dotgit, "modules"))...)
		for _, root := range roots {
			err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						return nil
					}
					return err
				}
				if e.IsDir() {
					return nil
				}
				info, err := e.Info()
				if err != nil {
					return err
				}
				h, err := metaHash(p, info)
				if err != nil {
					return err
				}
				rel, err := filepath.Rel(top, p)
				if err != nil {
					return err
				}
				out[filepath.ToSlash(rel)] = h
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("read the git files of the submodule %s: %w", d, err)
			}
		}
	}
	return out, nil
}
