package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Devices are the device files an agent may write: the bit buckets.
// Missing ones are skipped. No terminal: /dev/pts holds the user's own
// terminals, whose escape sequences and input a writer controls, and a
// pseudo-terminal the agent opened through /dev/ptmx lives there too, so
// it gets none.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// DenyDirs returns the scope.deny patterns that name a plain directory of
// the work tree (`vendor`, `vendor/`, `vendor/**`: a literal path with no
// other glob meta, that exists as a directory), as absolute paths, sorted.
func DenyDirs(workTree string, patterns []string) []string {
	var out []string
	for _, p := range patterns {
		rel := strings.TrimSuffix(strings.TrimSuffix(p, "/**"), "/")
		rel = strings.TrimPrefix(rel, "./")
		if rel == "" || rel == "." || strings.ContainsAny(rel, `*?[]{}\`) || filepath.IsAbs(rel) {
			continue
		}
		rel = filepath.Clean(rel)
		if rel == ".." || strings.HasPrefix(rel, "../") || rel == ".git" || strings.HasPrefix(rel, ".git/") {
			continue
		}
		abs := filepath.Join(workTree, rel)
		if fi, err := os.Lstat(abs); err != nil || !fi.IsDir() {
			continue
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	sort.Strings(out)
	return out
}

// ErrWritable is wrapped by ResolveWritable's errors: an entry of
// sandbox.writable that cannot be used.
var ErrWritable = errors.New("sandbox.writable")

// ErrStatePath is wrapped by MakePlan's error when a state dir or file of
// the agent CLI cannot be granted: the environment, not the config, is
// wrong.
var ErrStatePath = errors.New("sandbox")

// ResolveWritable turns sandbox.writable entries as written (absolute,
// ~/..., or relative to the work tree: the checkout, or the run's worktree
// with --worktree) into absolute paths.
func ResolveWritable(entries []string, repo, home string) ([]string, error) {
	var out []string
	for _, e := range entries {
		p := e
		switch {
		case p == "~" || strings.HasPrefix(p, "~/"):
			if home == "" {
				return nil, fmt.Errorf("%w %q: HOME is not set", ErrWritable, e)
			}
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		case !filepath.IsAbs(p):
			p = filepath.Join(repo, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

// Layout is what the writable set of a run is built from.
type Layout struct {
	WorkTree string   // where the agent works
	DenyDirs []string // DenyDirs of the work tree
	TempDir  string   // the run's own temporary directory
	Extra    []string // sandbox.writable and the agent's state dirs, absolute
}

// Build is the policy of a confined run: with a namespace the whole work
// tree is writable and .git and the deny directories are bound read-only;
// without, the writable set is built around them (d.TopLevel, d.Around).
func Build(d Decision, l Layout) (Policy, error) {
	p := Policy{}
	if !d.Confine {
		return p, nil
	}
	gitPath := filepath.Join(l.WorkTree, ".git")
	switch {
	case d.Namespace:
		p.Writable = []string{l.WorkTree}
		if _, err := os.Lstat(gitPath); err == nil {
			p.ReadOnly = append(p.ReadOnly, gitPath)
		}
		p.ReadOnly = append(p.ReadOnly, l.DenyDirs...)
	default:
		var excluded []string
		if d.TopLevel {
			excluded = append(excluded, gitPath)
		}
		excluded = append(excluded, l.DenyDirs...)
		w, err := around(l.WorkTree, excluded, !d.TopLevel)
		if err != nil {
			return p, err
		}
		p.Writable = w
	}
	if l.TempDir != "" {
		p.Writable = append(p.Writable, l.TempDir)
	}
	p.Writable = append(p.Writable, Devices...)
	for _, e := range l.Extra {
		if !slices.Contains(p.Writable, e) {
			p.Writable = append(p.Writable, e)
		}
	}
	p.Writable = settle(p.Writable)
	return p, nil
}

// settle is the writable set as the helper grants it: each path with the
// symbolic links on its way resolved (the helper follows none, so that a
// link made after the plan grants nothing), less every path that lies
// beneath another writable directory. Such a path adds no right, only a way
// out: the agent can replace it, or a directory on its way, by a symbolic
// link to anywhere, for a later call or a resumed run to grant. For the same
// reason a link met beneath a writable directory drops the path: the agent
// may have made it.
func settle(paths []string) []string {
	first := make([]string, 0, len(paths))
	for _, p := range paths {
		if r, ok := resolvePath(p, nil); ok {
			first = append(first, r)
		}
	}
	var dirs []string
	for _, r := range first {
		if isRealDir(r) {
			dirs = append(dirs, r)
		}
	}
	var out []string
	for _, p := range paths {
		r, ok := resolvePath(p, dirs)
		if !ok || beneathAny(r, dirs) || slices.Contains(out, r) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// resolvePath resolves the symbolic links on the way to p (absolute), one
// component at a time; the missing part of a path is kept as written. It
// fails on a link that lies beneath one of dirs, and on a loop.
func resolvePath(p string, dirs []string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	cur := string(filepath.Separator)
	rest := strings.Split(p, string(filepath.Separator))
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...), true
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 || beneathAny(next, dirs) {
			return "", false
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		rest = append(strings.Split(target, string(filepath.Separator)), rest...)
	}
	return cur, true
}

// beneathAny reports whether p lies strictly beneath one of dirs.
func beneathAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == string(filepath.Separator) {
			if p != d {
				return true
			}
			continue
		}
		if strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func isRealDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// around lists what to grant so that everything beneath root is writable
// but the excluded paths (and, without grantRoot, root itself): each entry
// of a directory on the way to an excluded path is granted but that
// directory is not, so it accepts no new entries. Symbolic links are never
// granted: Landlock would grant where they point.
func around(root string, excluded []string, grantRoot bool) ([]string, error) {
	if grantRoot && len(excluded) == 0 {
		return []string{root}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: list %s: %w", root, err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		if slices.Contains(excluded, p) || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		var below []string
		for _, x := range excluded {
			if strings.HasPrefix(x, p+string(filepath.Separator)) {
				below = append(below, x)
			}
		}
		if len(below) == 0 {
			out = append(out, p)
			continue
		}
		if !e.IsDir() {
			continue
		}
		sub, err := around(p, below, false)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}
