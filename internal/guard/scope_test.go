package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		paths []string
		allow []string
		deny  []string
		want  []Violation
	}{
		{name: "no rules allow everything", paths: []string{"a", "b/c"}},
		{name: "allow glob", paths: []string{"api/x.go", "api/v1/y.go", "web/z.js"}, allow: []string{"api/**"},
			want: []Violation{{Path: "web/z.js", Rule: RuleAllow}}},
		{name: "directory pattern covers its tree", paths: []string{"api/v1/y.go", "apix/y.go"}, allow: []string{"api/"},
			want: []Violation{{Path: "apix/y.go", Rule: RuleAllow}}},
		{name: "single star stays in a segment", paths: []string{"docs/a.md", "docs/deep/b.md", "docs/c.txt"}, allow: []string{"docs/*.md"},
			want: []Violation{{Path: "docs/deep/b.md", Rule: RuleAllow}, {Path: "docs/c.txt", Rule: RuleAllow}}},
		{name: "double star at any depth", paths: []string{"a.md", "x/y/b.md", "x/c.go"}, allow: []string{"**/*.md"},
			want: []Violation{{Path: "x/c.go", Rule: RuleAllow}}},
		{name: "deny wins over allow", paths: []string{"api/x.go", "api/secrets/key.pem"}, allow: []string{"api/**"}, deny: []string{"**/secrets/**"},
			want: []Violation{{Path: "api/secrets/key.pem", Rule: RuleDeny, Pattern: "**/secrets/**"}}},
		{name: "deny alone", paths: []string{".github/workflows/ci.yml", "main.go"}, deny: []string{"/.github"},
			want: []Violation{{Path: ".github/workflows/ci.yml", Rule: RuleDeny, Pattern: "/.github"}}},
		{name: "first matching deny is named", paths: []string{"a.env"}, deny: []string{"*.key", "*.env", "a.*"},
			want: []Violation{{Path: "a.env", Rule: RuleDeny, Pattern: "*.env"}}},
		{name: "rename out of scope: both names judged",
			paths: Paths([]Change{{Path: "web/moved.go", OrigPath: "api/moved.go", Kind: KindRenamed}}), allow: []string{"api/**"},
			want: []Violation{{Path: "web/moved.go", Rule: RuleAllow}}},
		{name: "rename from a denied place", paths: Paths([]Change{{Path: "api/k.go", OrigPath: "vendor/k.go", Kind: KindRenamed}}),
			allow: []string{"api/**"}, deny: []string{"vendor"},
			want: []Violation{{Path: "vendor/k.go", Rule: RuleDeny, Pattern: "vendor"}}},
		{name: "newline and space in a name", paths: []string{"api/odd\nname.go", "web/odd\nname .go"}, allow: []string{"api/*.go"},
			want: []Violation{{Path: "web/odd\nname .go", Rule: RuleAllow}}},
		{name: "nested repository entry", paths: []string{"vendor/lib/"}, deny: []string{"vendor/**"},
			want: []Violation{{Path: "vendor/lib/", Rule: RuleDeny, Pattern: "vendor/**"}}},
		{name: "leading ./ and trailing / dropped", paths: []string{"a", "a/b.go", "ab", "dir/x/y", "dirx"}, allow: []string{"./a", "dir/"},
			want: []Violation{{Path: "ab", Rule: RuleAllow}, {Path: "dirx", Rule: RuleAllow}}},
		{name: "escaped bang is a name", paths: []string{"!bang.txt", "bang.txt"}, deny: []string{`\!bang.txt`},
			want: []Violation{{Path: "!bang.txt", Rule: RuleDeny, Pattern: `\!bang.txt`}}},
		{name: "braces and classes", paths: []string{"a.go", "a.ts", "b.py"}, allow: []string{"*.{go,ts}"},
			want: []Violation{{Path: "b.py", Rule: RuleAllow}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckScope(tt.paths, tt.allow, tt.deny)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCheckScopeBadGlob(t *testing.T) {
	t.Parallel()
	_, err := CheckScope([]string{"a"}, []string{"api/[x"}, nil)
	require.ErrorIs(t, err, ErrBadGlob)
	assert.Contains(t, err.Error(), `"api/[x"`)
	assert.Contains(t, err.Error(), "scope.allow")

	_, err = CheckScope([]string{"a"}, nil, []string{"{a,b"})
	require.ErrorIs(t, err, ErrBadGlob)
	assert.Contains(t, err.Error(), "scope.deny")

	// A gitignore-style negation would silently match nothing (only a file
	// named "!generated/x"), leaving the files it meant to keep out allowed.
	_, err = CheckScope([]string{"generated/x.go"}, []string{"**"}, []string{"!src/**"})
	require.ErrorIs(t, err, ErrBadGlob)
	assert.Contains(t, err.Error(), `"!src/**"`)
	assert.Contains(t, err.Error(), "scope.deny")

	// "." would match no path git reports, so every change would be outside.
	_, err = CheckScope([]string{"a.go"}, []string{"."}, nil)
	require.ErrorIs(t, err, ErrBadGlob)
	assert.Contains(t, err.Error(), "empty")
}

func TestCheckScopeOnRealRename(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, true)
	commitFiles(t, dir, map[string]string{"api/h.go": "package api\n"})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "internal"), 0o755))
	gitT(t, dir, "mv", "api/h.go", "internal/h.go")

	changes, err := Changes(ctx, dir)
	require.NoError(t, err)
	got, err := CheckScope(Paths(changes), []string{"internal/**"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []Violation{{Path: "api/h.go", Rule: RuleAllow}}, got,
		"moving a file into scope from outside still touches the outside")
}

func TestValidGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		ok      bool
	}{
		{"api/**", true},
		{"**/*.go", true},
		{"docs/", true},
		{"./cmd/*", true},
		{"*.{go,md}", true},
		{"[abc].txt", true},
		{"", false},
		{"/", false},
		{"../outside/**", false},
		{"a/../b", false},
		{"[abc", false},
		{"{a,b", false},
		{"!secrets/**", false},
		{"!", false},
		{`\!bang.txt`, true},
		{"[!a]*.go", true},
		{".", false},
		{"a/./b", false},
	}
	for _, tt := range tests {
		err := ValidGlob(tt.pattern)
		if tt.ok {
			assert.NoError(t, err, "%q", tt.pattern)
		} else {
			require.ErrorIs(t, err, ErrBadGlob, "%q", tt.pattern)
			assert.Contains(t, err.Error(), `"`+tt.pattern+`"`)
		}
	}
}

func TestCheckLockfiles(t *testing.T) {
	t.Parallel()
	defaults := []string{"go.sum", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "Cargo.lock"}
	tests := []struct {
		name      string
		paths     []string
		lockfiles []string
		want      []string
	}{
		{name: "none", paths: []string{"main.go", "go.mod"}, lockfiles: defaults},
		{name: "root", paths: []string{"go.sum", "main.go"}, lockfiles: defaults, want: []string{"go.sum"}},
		{name: "nested at any depth", paths: []string{"web/package-lock.json", "svc/a/Cargo.lock", "web/src/app.js"},
			lockfiles: defaults, want: []string{"svc/a/Cargo.lock", "web/package-lock.json"}},
		{name: "name must match whole", paths: []string{"not-go.sum", "go.sum.bak"}, lockfiles: defaults},
		{name: "glob on name", paths: []string{"x/deps.lock", "y/deps.txt"}, lockfiles: []string{"*.lock"}, want: []string{"x/deps.lock"}},
		{name: "entry with slash is a path glob", paths: []string{"web/yarn.lock", "api/yarn.lock"}, lockfiles: []string{"web/yarn.lock"},
			want: []string{"web/yarn.lock"}},
		{name: "path glob with double star", paths: []string{"tools/a/b/req.txt", "req.txt"}, lockfiles: []string{"tools/**/req.txt"},
			want: []string{"tools/a/b/req.txt"}},
		{name: "unique", paths: []string{"go.sum", "go.sum"}, lockfiles: []string{"go.sum", "*.sum"}, want: []string{"go.sum"}},
		{name: "invalid entry matches its exact name", paths: []string{"a[b", "ab"}, lockfiles: []string{"a[b"}, want: []string{"a[b"}},
		{name: "no lockfiles configured", paths: []string{"go.sum"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, CheckLockfiles(tt.paths, tt.lockfiles))
		})
	}
}

func TestOverlap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b []string
		want bool
	}{
		{name: "whole checkout vs anything", a: nil, b: []string{"api/**"}, want: true},
		{name: "both whole checkout", want: true},
		{name: "disjoint directories", a: []string{"api/**"}, b: []string{"web/**"}, want: false},
		{name: "disjoint plain directories", a: []string{"api"}, b: []string{"web/"}, want: false},
		{name: "same directory", a: []string{"api/**"}, b: []string{"api/**"}, want: true},
		{name: "parent and child", a: []string{"api/**"}, b: []string{"api/v1/x.go"}, want: true},
		{name: "directory covers its files", a: []string{"api"}, b: []string{"api/v1/*.go"}, want: true},
		{name: "sibling files", a: []string{"api/a.go"}, b: []string{"api/b.go"}, want: false},
		{name: "glob segment cannot match literal", a: []string{"*.go"}, b: []string{"docs/**"}, want: false},
		{name: "glob segment matches literal", a: []string{"a*/x"}, b: []string{"api/x"}, want: true},
		{name: "deeper glob vs other directory", a: []string{"api/*.go"}, b: []string{"web"}, want: false},
		{name: "double star anywhere", a: []string{"**/*.go"}, b: []string{"web/**"}, want: true},
		{name: "two globs in a segment are assumed to meet", a: []string{"a*"}, b: []string{"ab*"}, want: true},
		{name: "two globs that cannot meet are still conservative", a: []string{"*.go"}, b: []string{"*.md"}, want: true},
		{name: "one overlapping pair is enough", a: []string{"api/**", "docs/**"}, b: []string{"web/**", "docs/x.md"}, want: true},
		{name: "every pair disjoint", a: []string{"api/**", "cmd/**"}, b: []string{"web/**", "docs/**"}, want: false},
		{name: "invalid pattern overlaps", a: []string{"api/[x"}, b: []string{"web/**"}, want: true},
		{name: "leading slash and dot", a: []string{"/api/**"}, b: []string{"./api"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Overlap(tt.a, tt.b))
			assert.Equal(t, tt.want, Overlap(tt.b, tt.a), "symmetric")
		})
	}
}
