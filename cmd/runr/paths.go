package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/termtext"
)

// shownPath is how every message of runr names a file or directory
// (docs/cli.md, "Paths in messages"): relative to the working directory
// when it lies beneath it, else absolute (the working directory itself
// too: "." would say less than its name). A relative path was given
// relative to the working directory and is taken as it is. The result is
// safe to print (termtext.VisibleLine). JSON output keeps absolute paths.
func shownPath(path string) string {
	return termtext.VisibleLine(relToWD(path))
}

func relToWD(path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, ok := beneath(wd, path); ok {
		return rel
	}
	// Either may go through a symbolic link (macOS's /tmp).
	if rel, ok := beneath(realPath(wd), realPath(path)); ok {
		return rel
	}
	return path
}

func beneath(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// realPath is p with its symbolic links resolved, as far as it exists (a
// file named before it is written).
func realPath(p string) string {
	rest := ""
	for dir := p; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// absPath is path made absolute, for JSON output; "" stays "".
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// repoPath is a path recorded relative to the repository (a run's task
// file) made absolute, for shownPath; an absolute one stays as it is.
func repoPath(repo, path string) string {
	if path == "" || filepath.IsAbs(path) || repo == "" {
		return path
	}
	return filepath.Join(repo, path)
}
