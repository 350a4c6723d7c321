package guard

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Scope rules, as Violation.Rule spells them (the config keys they come from).
const (
	RuleAllow = "scope.allow"
	RuleDeny  = "scope.deny"
)

// Violation is a changed path that a scope rule forbids. Pattern is the deny
// or protect glob it matched; it is empty for a path that no allow glob
// matched. Change says, for the protect rule, what happened to the file
// (ChangeModified, ChangeDeleted).
type Violation struct {
	Path    string
	Rule    string
	Pattern string
	Change  string
}

// ValidGlob reports whether pattern is a usable scope or lockfile glob; the
// error names the pattern and says what is wrong.
func ValidGlob(pattern string) error {
	p := normalizePattern(pattern)
	segments := strings.Split(p, "/")
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("%w %q: a pattern must not be empty; to allow the whole repository, leave scope.allow empty", ErrBadGlob, pattern)
	case strings.HasPrefix(p, "!"):
		// In a .gitignore a leading ! negates; here it would be a literal
		// name and match nothing, so the files meant to be kept out would pass.
		return fmt.Errorf("%w %q: a leading ! does not negate a pattern here; list the paths to keep out under scope.deny (write \\! for a name that starts with !)", ErrBadGlob, pattern)
	case slices.Contains(segments, ".."):
		return fmt.Errorf("%w %q: patterns are relative to the repository root and cannot use .. segments", ErrBadGlob, pattern)
	case slices.Contains(segments, "."):
		return fmt.Errorf("%w %q: git names paths without . segments; drop them", ErrBadGlob, pattern)
	case !doublestar.ValidatePattern(p):
		return fmt.Errorf("%w %q: check its brackets and braces (patterns are globs like \"api/**\" or \"*.md\")", ErrBadGlob, pattern)
	}
	return nil
}

// normalizePattern drops a leading "/" or "./" and a trailing "/".
func normalizePattern(p string) string {
	p = strings.TrimPrefix(p, "./")
	p = strings.TrimLeft(p, "/")
	return strings.TrimRight(p, "/")
}

// matchScope reports whether a valid, normalised pattern matches p or one of
// its parent directories.
func matchScope(pattern, p string) bool {
	p = strings.TrimRight(p, "/")
	for {
		if doublestar.MatchUnvalidated(pattern, p) {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// CheckScope judges each path against the allow and deny globs: a path that
// matches a deny glob violates scope.deny; otherwise, with a non-empty allow
// list, a path that matches no allow glob violates scope.allow. An empty allow
// list allows everything not denied. Pass both names of a rename: moving a
// file out of scope, or into it from outside, touches both. A bad glob is an
// error that names it.
//
// Patterns are doublestar globs over paths relative to the repository root,
// with '/' separators: `*` stays inside one path segment, `**` spans any
// number of them, and `?`, `[...]` and `{a,b}` work as usual. Like a
// .gitignore entry, a pattern that matches a directory covers everything under
// it, so `docs` and `docs/` mean the same as `docs/**`. A leading "/" or "./"
// is dropped. A leading "!" is refused rather than read as a literal name: it
// does not negate, as it would in a .gitignore.
func CheckScope(paths, allow, deny []string) ([]Violation, error) {
	allowN, err := normalizeAll("scope.allow", allow)
	if err != nil {
		return nil, err
	}
	denyN, err := normalizeAll("scope.deny", deny)
	if err != nil {
		return nil, err
	}
	var violations []Violation
	for _, p := range paths {
		if i := slices.IndexFunc(denyN, func(d string) bool { return matchScope(d, p) }); i >= 0 {
			violations = append(violations, Violation{Path: p, Rule: RuleDeny, Pattern: deny[i]})
			continue
		}
		if len(allowN) > 0 && !slices.ContainsFunc(allowN, func(a string) bool { return matchScope(a, p) }) {
			violations = append(violations, Violation{Path: p, Rule: RuleAllow})
		}
	}
	return violations, nil
}

// normalizeAll validates and normalises a list of patterns from key.
func normalizeAll(key string, patterns []string) ([]string, error) {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		if err := ValidGlob(p); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out[i] = normalizePattern(p)
	}
	return out, nil
}

// CheckLockfiles returns, sorted and unique, the paths that are lockfiles. An
// entry without '/' is matched against the file name at any depth, so
// "package-lock.json" catches web/package-lock.json (globs such as "*.lock"
// work too); an entry with '/' is a glob on the whole path from the
// repository root. An invalid entry matches only a file of exactly that name.
func CheckLockfiles(paths, lockfiles []string) []string {
	var hits []string
	for _, p := range paths {
		for _, l := range lockfiles {
			if matchLockfile(normalizePattern(l), p) {
				hits = append(hits, p)
				break
			}
		}
	}
	slices.Sort(hits)
	return slices.Compact(hits)
}

func matchLockfile(entry, p string) bool {
	name := p
	if !strings.Contains(entry, "/") {
		name = path.Base(p)
	}
	ok, err := doublestar.Match(entry, name)
	if err != nil {
		return entry == name
	}
	return ok
}

// Overlap reports whether two claims (scope.allow lists; an empty list claims
// the whole checkout) could cover a common path. It is conservative: it says
// false only when every pair of patterns is clearly disjoint, that is when,
// walking both patterns segment by segment from the root, some segment is a
// literal on one side that the other side's segment (literal or single-segment
// glob) cannot match, before either side reaches a `**`. So "api/**" and
// "web/**" are disjoint, as are "api/*.go" and "web", and "*.go" and "docs/**";
// "api/**" and "api/v1", "**/*.go" and "web/**", or "a*" and "ab*" overlap.
// One pattern ending where the other goes on overlaps, because a pattern
// covers everything under what it matches. Invalid patterns overlap anything.
func Overlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, pa := range a {
		for _, pb := range b {
			if patternsOverlap(pa, pb) {
				return true
			}
		}
	}
	return false
}

func patternsOverlap(a, b string) bool {
	if ValidGlob(a) != nil || ValidGlob(b) != nil {
		return true
	}
	sa := strings.Split(normalizePattern(a), "/")
	sb := strings.Split(normalizePattern(b), "/")
	for i := 0; i < len(sa) && i < len(sb); i++ {
		x, y := sa[i], sb[i]
		if x == "**" || y == "**" {
			return true
		}
		xLit, yLit := !hasMeta(x), !hasMeta(y)
		switch {
		case xLit && yLit:
			if x != y {
				return false
			}
		case xLit:
			if !doublestar.MatchUnvalidated(y, x) {
				return false
			}
		case yLit:
			if !doublestar.MatchUnvalidated(x, y) {
				return false
			}
		}
		// Two globs in the same segment: assume they can meet.
	}
	return true
}

// hasMeta reports whether a pattern segment holds glob syntax.
func hasMeta(s string) bool {
	return strings.ContainsAny(s, `*?[{\`)
}
