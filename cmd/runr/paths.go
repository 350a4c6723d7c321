package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// shownPath is how every message of runr names a file or directory
// (docs/cli.md, "Paths in messages"): relative to the working directory
// when it lies in it or beneath it, else absolute. A relative path is
// taken as it is. The result is safe to print (stopreasons.VisibleLine).
// JSON output keeps absolute paths and is not shown through it.
func shownPath(path string) string {
	return stopreasons.VisibleLine(relToWD(path))
}

func relToWD(path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	for _, dir := range []string{wd, realPath(wd)} {
		if rel, ok := beneath(dir, path); ok {
			return rel
		}
	}
	// The path may itself go through a symbolic link (macOS's /tmp).
	if real := realPath(path); real != path {
		if rel, ok := beneath(realPath(wd), real); ok {
			return rel
		}
	}
	return path
}

func beneath(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
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
