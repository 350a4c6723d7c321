package guard

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Change kinds, as Change.Kind spells them.
const (
	KindModified  = "modified"
	KindAdded     = "added"
	KindDeleted   = "deleted"
	KindRenamed   = "renamed"
	KindCopied    = "copied"
	KindUntracked = "untracked"
	KindUnmerged  = "unmerged"
)

// Change is one uncommitted change of the working tree. Paths are relative to
// the repository root, with '/' separators, exactly as git names them (any
// bytes but NUL). OrigPath is the source of a rename or copy.
type Change struct {
	Path     string
	OrigPath string
	Kind     string
}

// Changes lists the uncommitted changes of the working tree that holds dir:
// staged and unstaged edits, and untracked files that are not ignored. Nothing
// under .git is ever listed, so the run store there never shows.
func Changes(ctx context.Context, dir string) ([]Change, error) {
	st, err := ReadStatus(ctx, dir)
	return st.Changes, err
}

// Status is what one git status of a working tree tells: its uncommitted
// changes, as Changes lists them, and the commit HEAD points at ("" before
// the first commit).
type Status struct {
	Head    string
	Changes []Change
}

// ReadStatus reads the Status of the working tree that holds dir with one
// git process.
func ReadStatus(ctx context.Context, dir string) (Status, error) {
	out, err := git(ctx, dir, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--ignored=no")
	if err != nil {
		if exitCode(err) > 0 {
			return Status{}, fmt.Errorf("read the status of %s: %w: %v", dir, ErrNotRepository, err)
		}
		return Status{}, fmt.Errorf("read the status of %s: %w", dir, err)
	}
	changes, err := parseStatus(out)
	if err != nil {
		return Status{}, fmt.Errorf("read the status of %s: %w", dir, err)
	}
	return Status{Head: branchOID(out), Changes: changes}, nil
}

// branchOID is the commit of HEAD in the "# branch.oid" header of a
// porcelain v2 status, "" before the first commit or without the header.
func branchOID(out []byte) string {
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if oid, ok := bytes.CutPrefix(rec, []byte("# branch.oid ")); ok && string(oid) != "(initial)" {
			return string(oid)
		}
	}
	return ""
}

// parseStatus parses `git status --porcelain=v2 -z`. Records are NUL
// terminated and names are raw, so spaces, newlines and non-UTF-8 bytes in
// file names come through untouched.
func parseStatus(out []byte) ([]Change, error) {
	var changes []Change
	records := bytes.Split(out, []byte{0})
	for i := 0; i < len(records); i++ {
		rec := string(records[i])
		if rec == "" {
			continue
		}
		switch rec[0] {
		case '#', '!':
			// Headers and ignored entries carry no change.
		case '?':
			changes = append(changes, Change{Path: rec[2:], Kind: KindUntracked})
		case '1':
			// 1 XY sub mH mI mW hH hI path
			f, err := fields(rec, 8)
			if err != nil {
				return nil, err
			}
			changes = append(changes, Change{Path: f[8], Kind: ordinaryKind(f[1])})
		case '2':
			// 2 XY sub mH mI mW hH hI Xscore path NUL origPath
			f, err := fields(rec, 9)
			if err != nil {
				return nil, err
			}
			if i+1 >= len(records) {
				return nil, fmt.Errorf("git status: rename record for %q has no original name", f[9])
			}
			i++
			kind := KindRenamed
			if f[8][0] == 'C' {
				kind = KindCopied
			}
			changes = append(changes, Change{Path: f[9], OrigPath: string(records[i]), Kind: kind})
		case 'u':
			// u XY sub m1 m2 m3 mW h1 h2 h3 path
			f, err := fields(rec, 10)
			if err != nil {
				return nil, err
			}
			changes = append(changes, Change{Path: f[10], Kind: KindUnmerged})
		default:
			return nil, fmt.Errorf("git status: unexpected record %q", rec)
		}
	}
	return changes, nil
}

// fields splits a record into n space-separated fields and the path after
// them, which may itself hold spaces.
func fields(rec string, n int) ([]string, error) {
	f := make([]string, 0, n+1)
	rest := rec
	for range n {
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			return nil, fmt.Errorf("git status: short record %q", rec)
		}
		f = append(f, rest[:i])
		rest = rest[i+1:]
	}
	if rest == "" || f[1] == "" || (n == 9 && f[8] == "") {
		return nil, fmt.Errorf("git status: malformed record %q", rec)
	}
	return append(f, rest), nil
}

// ordinaryKind names a changed tracked entry from its XY status: X is the
// index against HEAD, Y the working tree against the index. A file missing
// from the working tree is "deleted" whatever its index says, because that is
// what the tree now holds.
func ordinaryKind(xy string) string {
	if len(xy) != 2 {
		return KindModified
	}
	switch {
	case xy[0] == 'D' || xy[1] == 'D':
		return KindDeleted
	case xy[0] == 'A' || xy[1] == 'A':
		return KindAdded
	default:
		return KindModified
	}
}

// Paths returns every path the changes name, both names of a rename or copy,
// sorted and without duplicates.
func Paths(changes []Change) []string {
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		paths = append(paths, c.Path)
		if c.OrigPath != "" {
			paths = append(paths, c.OrigPath)
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// Dirty returns the changed paths of the working tree that holds dir, leaving
// out those in ignore (paths relative to the repository root, such as the task
// and config files a first run brings along). An empty result means the tree
// is clean enough to start a run.
func Dirty(ctx context.Context, dir string, ignore []string) ([]string, error) {
	changes, err := Changes(ctx, dir)
	if err != nil {
		return nil, err
	}
	var dirty []string
	for _, p := range Paths(changes) {
		if !slices.Contains(ignore, p) {
			dirty = append(dirty, p)
		}
	}
	return dirty, nil
}
