package config

import (
	"sort"
	"strings"
)

// Closest returns up to n of candidates that s looks like a misspelling or
// a part of, fewest edits first, for "did you mean" messages about keys,
// values and stop reason codes. A candidate is near when it is at most a
// third of its length in edits from s (2 edits always are), or when it
// contains s of 3 characters or more ("max_ticks" for budget.max_ticks);
// case does not count. Candidates equally near keep their order.
func Closest(s string, candidates []string, n int) []string {
	s = strings.ToLower(s)
	type near struct {
		candidate string
		edits     int
	}
	var found []near
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := editDistance(s, lc)
		if d <= max(2, len(c)/3) || len(s) >= 3 && strings.Contains(lc, s) {
			found = append(found, near{c, d})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].edits < found[j].edits })
	var out []string
	for i := 0; i < len(found) && i < n; i++ {
		out = append(out, found[i].candidate)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
