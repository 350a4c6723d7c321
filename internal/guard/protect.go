package guard

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// What happened to a protected file (Violation.Change).
const (
	ChangeModified = "modified"
	ChangeDeleted  = "deleted or renamed"
	// ChangeMode: the content is the same, the executable bit is not (git
	// records it, and a test runner may skip a test that lost it).
	ChangeMode = "executable bit changed"
)

// Existed reports whether a file was at path p (relative to the root) when
// the snapshot was taken, tracked or not (an untracked file of a dirty
// checkout counts), unless the start's ignore rules left it out.
func (s *Snapshot) Existed(p string) bool {
	f, ok := s.Files[p]
	return ok && f.Hash != DeletedHash
}

// CheckProtect returns, in the order of changed, a violation for each
// changed path (relative to the root, as ChangedFiles and a Tracker's Look
// give them) that existed at the start of the run and matches a protect
// glob: it was modified, or it is gone (deleted, or renamed, which deletes
// the old name). A file that did not exist at the start may be created and
// changed freely, whatever its name. Globs are scope globs (CheckScope): a
// glob that names a directory protects every file under it. A bad glob is
// an error that names it.
func (s *Snapshot) CheckProtect(changed, protect []string) ([]Violation, error) {
	globs, err := normalizeAll("scope.protect", protect)
	if err != nil || len(globs) == 0 {
		return nil, err
	}
	var out []Violation
	for _, p := range changed {
		if !s.Existed(p) {
			continue
		}
		i := slices.IndexFunc(globs, func(g string) bool { return matchScope(g, p) })
		if i < 0 {
			continue
		}
		change := ChangeModified
		if _, err := os.Lstat(filepath.Join(s.Top, filepath.FromSlash(p))); errors.Is(err, fs.ErrNotExist) {
			change = ChangeDeleted
		} else if now, err := newHashCache(s.ObjectFormat).state(context.Background(), s.Top, p); err == nil && now.Hash == s.Files[p].Hash {
			// Listed for its mode alone.
			change = ChangeMode
		}
		out = append(out, Violation{Path: p, Rule: stopreasons.RuleProtect, Pattern: protect[i], Change: change})
	}
	// A change of the executable bit alone leaves the content, which is
	// all that changed lists, as it was.
	var modes []Violation
	for p, was := range s.Files {
		if was.Hash == DeletedHash || was.Mode&unix.S_IFMT != unix.S_IFREG || slices.Contains(changed, p) {
			continue
		}
		i := slices.IndexFunc(globs, func(g string) bool { return matchScope(g, p) })
		if i < 0 {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(s.Top, filepath.FromSlash(p)), &st); err != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
			continue // a change of its content or kind, which changed lists
		}
		if uint32(st.Mode)&unix.S_IXUSR != was.Mode&unix.S_IXUSR {
			modes = append(modes, Violation{Path: p, Rule: stopreasons.RuleProtect, Pattern: protect[i], Change: ChangeMode})
		}
	}
	slices.SortFunc(modes, func(a, b Violation) int { return strings.Compare(a.Path, b.Path) })
	return append(out, modes...), nil
}
