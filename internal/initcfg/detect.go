// Package initcfg writes a first runr.yaml for a repository, and a TASK.md
// template when there is none: it detects the kind of project (Go, Rust,
// Node, Python, a Makefile) for the verify command, and the agent CLI on
// PATH. It never writes through a symlink or over a file it was not told
// to replace.
package initcfg

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/proc"
)

// Project is what Detect found in a repository's root.
type Project struct {
	Kind   string // go, rust, node, python, make; "" when none was found
	Marker string // the file that told: go.mod, Cargo.toml, ...
	Verify string // the verify command; "" when the project has none to run
	// Note says why there is no verify command, or how it was chosen.
	Note string
	// CoverageVerify is a verify command of the project's kind that also
	// writes a coverage profile under $RUNR_COVERAGE_DIR, for
	// verify.coverage.min_changed; "" for a kind runr proposes none for.
	CoverageVerify string
	// Protect are the globs of the project's test files, proposed for
	// scope.protect, and ProtectFrom the files that told (go.mod, ...).
	Protect, ProtectFrom []string
}

// maxManifest bounds what is read of package.json and a Makefile: init
// reads only to choose a command.
const maxManifest = 1 << 20

// Detect looks at dir's root for the files that say how the project is
// tested. A language's own test command comes first (go test, cargo test,
// the package.json test script, pytest), in that order when there are
// several; a Makefile's test target is used when no language gives one,
// since `make test` often runs much more than a milestone needs. The test
// files to protect are those of every language found, whichever gives
// the command.
func Detect(dir string) Project {
	has := func(name string) bool {
		info, err := os.Stat(filepath.Join(dir, name))
		return err == nil && info.Mode().IsRegular()
	}
	p := detect(dir, has)
	p.Protect, p.ProtectFrom = testGlobs(has)
	p.CoverageVerify = coverageVerify[p.Kind]
	return p
}

// coverageVerify are, per kind of project, a test command that writes a
// coverage profile where runr reads it ($RUNR_COVERAGE_DIR): go test's
// cover profile, coverage.py's LCOV (its data file kept out of the work
// tree), node's own test runner with its lcov reporter.
var coverageVerify = map[string]string{
	"go": `go test -coverprofile="$` + coverage.DirVar + `/go.out" ./...`,
	"python": `COVERAGE_FILE="$` + coverage.DirVar + `/.coverage" python3 -m coverage run --source=. -m pytest && ` +
		`python3 -m coverage lcov -o "$` + coverage.DirVar + `/py.lcov"`,
	"node": `node --test --experimental-test-coverage --test-reporter=lcov --test-reporter-destination="$` + coverage.DirVar + `/lcov.info" ` +
		`--test-reporter=spec --test-reporter-destination=stdout`,
}

// testFiles are, per file that marks a kind of project, the globs its test
// files usually match.
var testFiles = []struct {
	markers []string
	globs   []string
}{
	{[]string{"go.mod"}, []string{"**/*_test.go"}},
	{[]string{"Cargo.toml"}, []string{"tests/**"}},
	{[]string{"package.json"}, []string{"**/*.test.*", "**/*.spec.*", "**/__tests__/**"}},
	{[]string{"pyproject.toml", "setup.py", "setup.cfg"}, []string{"tests/**", "**/test_*.py", "**/*_test.py"}},
	{[]string{"pom.xml", "build.gradle", "build.gradle.kts"}, []string{"src/test/**"}},
	{[]string{"Gemfile"}, []string{"spec/**", "test/**"}},
}

// testGlobs returns the test file globs of every kind of project whose
// marker has reports present, without repeats, and the markers found.
func testGlobs(has func(string) bool) (globs, from []string) {
	for _, t := range testFiles {
		for _, m := range t.markers {
			if has(m) {
				from = append(from, m)
				for _, g := range t.globs {
					if !slices.Contains(globs, g) {
						globs = append(globs, g)
					}
				}
				break
			}
		}
	}
	return globs, from
}

// detect is Detect's choice of the kind and the verify command.
func detect(dir string, has func(string) bool) Project {
	var fallback *Project
	switch {
	case has("go.mod"):
		return Project{Kind: "go", Marker: "go.mod", Verify: "go test ./..."}
	case has("Cargo.toml"):
		return Project{Kind: "rust", Marker: "Cargo.toml", Verify: "cargo test"}
	case has("package.json"):
		p := Project{Kind: "node", Marker: "package.json"}
		if hasTestScript(filepath.Join(dir, "package.json")) {
			p.Verify = nodeRunner(has) + " test"
			return p
		}
		p.Note = `package.json has no "test" script: add one, then list "npm test" here`
		fallback = &p
	case has("pyproject.toml"):
		return Project{Kind: "python", Marker: "pyproject.toml", Verify: "python3 -m pytest"}
	}
	if has("Makefile") && hasTestTarget(filepath.Join(dir, "Makefile")) {
		return Project{Kind: "make", Marker: "Makefile", Verify: "make test"}
	}
	if fallback != nil {
		return *fallback
	}
	return Project{Note: "no go.mod, Cargo.toml, package.json, pyproject.toml or Makefile with a test target was found: list the commands that check the work"}
}

// npmPlaceholder is the test script `npm init` writes, which only fails.
const npmPlaceholder = `echo "Error: no test specified" && exit 1`

func hasTestScript(path string) bool {
	data, err := readBounded(path)
	if err != nil {
		return false
	}
	var pkg struct {
		Scripts map[string]any `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return false
	}
	s, ok := pkg.Scripts["test"].(string)
	return ok && strings.TrimSpace(s) != "" && strings.TrimSpace(s) != npmPlaceholder
}

// nodeRunner is the package manager whose lockfile the project has.
func nodeRunner(has func(string) bool) string {
	switch {
	case has("pnpm-lock.yaml"):
		return "pnpm"
	case has("yarn.lock"):
		return "yarn"
	}
	return "npm"
}

// testTarget matches a Makefile rule for test (also "test check: ...").
var testTarget = regexp.MustCompile(`(?m)^(?:[^\s:#=]+[ \t]+)*test(?:[ \t]+[^\s:#=]+)*[ \t]*::?(?:[^=]|$)`)

func hasTestTarget(path string) bool {
	data, err := readBounded(path)
	return err == nil && testTarget.Match(data)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxManifest))
}

// Agent returns the first agent CLI of agents.Kinds() found on the PATH of
// env, or the first kind and false when none is. A kind without a program
// of its own (command) is never found.
func Agent(env []string) (kind string, found bool) {
	kinds := agents.Kinds()
	for _, k := range kinds {
		a, err := agents.Lookup(k)
		if err != nil {
			continue
		}
		program := a.Program(agents.Request{})
		if program == "" {
			continue
		}
		if _, err := proc.LookPath(program, "", env); err == nil {
			return k, true
		}
	}
	return kinds[0], false
}
