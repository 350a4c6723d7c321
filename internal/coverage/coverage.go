// Package coverage judges what a verify run shows it executed: the coverage
// profiles it wrote (Go cover profiles, LCOV tracefiles, Cobertura XML,
// recognised by their content) against the lines a milestone changed, and
// the summaries of the test runners in its output. Profiles are untrusted
// input: they are read as streams within fixed limits, only as regular
// files inside the work tree or the run's coverage directory, and what
// cannot be read becomes a message for the agent, never a crash.
package coverage

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DirVar is the environment variable that names the run's coverage
// directory to the verify commands, and the prefix of a verify.coverage
// profile glob that lies in it.
const DirVar = "RUNR_COVERAGE_DIR"

// dirPrefix starts a profile glob that is relative to the coverage
// directory rather than the work tree.
const dirPrefix = "$" + DirVar + "/"

// Line is one line the milestone added or modified: its number in the
// file as it is now, and its text (cut short; only whether it holds code
// is judged from it).
type Line struct {
	N    int
	Text string
}

// Changed are the milestone's added or modified lines by file, relative
// to the work tree with slashes.
type Changed map[string][]Line

// IsProfile reports whether rel, a path relative to the work tree with
// slashes, is a coverage profile of the run: it matches one of the
// verify.coverage.profiles globs that are relative to the work tree.
// Profiles are runr's, not the agent's: what verify writes there is
// judged by no guard.
func IsProfile(rel string, patterns []string) bool {
	for _, p := range WorkTreeGlobs(patterns) {
		if ok, _ := doublestar.Match(p, rel); ok {
			return true
		}
	}
	return false
}

// CheckPattern refuses a verify.coverage.profiles glob that could reach
// outside the work tree or the coverage directory: absolute, or with a ".."
// part. The error says what to write instead.
func CheckPattern(p string) error {
	rest, inDir := strings.CutPrefix(p, dirPrefix)
	switch {
	case strings.HasPrefix(p, "$") && !inDir:
		return fmt.Errorf("only $%s/ may start a profile path; write a path relative to the work tree, or under $%s/", DirVar, DirVar)
	case path.IsAbs(rest) || slices.Contains(strings.Split(rest, "/"), ".."):
		return fmt.Errorf("reaches outside the work tree; write a path relative to the work tree, or under $%s/", DirVar)
	case !doublestar.ValidatePattern(rest):
		return errors.New("is not a valid glob (e.g. coverage/lcov.info, **/coverage.xml)")
	}
	return nil
}

// WorkTreeGlobs are the profile globs relative to the work tree: those
// that start with $RUNR_COVERAGE_DIR/ name files of the coverage
// directory, which is read whole anyway.
func WorkTreeGlobs(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if !strings.HasPrefix(p, dirPrefix) {
			out = append(out, path.Clean(p))
		}
	}
	return out
}

// language names the language of a source file by its extension, so that
// a profile naming one file of a language vouches for all of them: "" for
// a file of no language runr knows a profile for.
func language(name string) string {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".go":
		return "go"
	case ".py":
		return "python"
	case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx":
		return "javascript"
	case ".rs":
		return "rust"
	case ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp":
		return "c"
	case ".java", ".kt", ".scala":
		return "jvm"
	case ".rb":
		return "ruby"
	case ".php":
		return "php"
	case ".cs":
		return "csharp"
	case ".swift":
		return "swift"
	}
	return ""
}

// testFile reports whether a file is a test by the naming habits of the
// languages above: its lines are not the code under test, and no profile
// need name it (go test never profiles its _test.go files).
func testFile(name string) bool {
	base := path.Base(name)
	switch {
	case strings.HasSuffix(base, "_test.go"),
		strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py"),
		strings.HasSuffix(base, "_test.py"), base == "conftest.py",
		strings.Contains(base, ".test."), strings.Contains(base, ".spec."):
		return true
	}
	for _, dir := range strings.Split(path.Dir(name), "/") {
		switch dir {
		case "test", "tests", "__tests__", "testdata", "spec":
			return true
		}
	}
	return false
}

// codeLine reports whether a changed line that no profile describes holds
// code: not blank, not only a comment, not only closing brackets.
func codeLine(text string) bool {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return false
	case strings.HasPrefix(t, "//"), strings.HasPrefix(t, "#"), strings.HasPrefix(t, "/*"), strings.HasPrefix(t, "*"):
		return false
	case strings.Trim(t, "})];,") == "":
		return false
	}
	return true
}
