package guard

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// ChangeRunner is what happened to a file that decides whether or how
// protected tests run (Violation.Change).
const ChangeRunner = "decides whether the protected tests run"

// runnerConfigs are the test runners' configuration files, by name: one
// at or above a protected test's directory decides which tests run and
// how (pytest's, Jest's, Vitest's, Mocha's, Karma's, Playwright's, and
// package.json, which holds Jest's key and the test script).
var runnerConfigs = []string{
	"conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini",
	"package.json", ".mocharc.js", ".mocharc.cjs", ".mocharc.json", ".mocharc.yaml", ".mocharc.yml",
	"karma.conf.js", "karma.conf.cjs",
}

// runnerConfigPrefixes are the runner configuration files named by a
// stem and any extension (jest.config.ts, vitest.config.mjs).
var runnerConfigPrefixes = []string{"jest.config.", "vitest.config.", "vitest.workspace.", "playwright.config."}

// CheckRunners returns a protect violation for each changed path (as
// CheckProtect takes them) that is not itself protected but decides
// whether or how protected tests run: a change to it is a change to them.
// For Go, a new or changed .go file (a new test file matching the protect
// globs included) in the directory (package) of a protected Go file that
// defines TestMain or an init function, calls os.Exit (each can end the
// test binary, successfully, before any test runs) or carries a build
// constraint; for Python and JavaScript, a test runner's
// configuration (conftest.py, pytest.ini, pyproject.toml, setup.cfg,
// tox.ini, package.json, jest/vitest/mocha/karma/playwright configs) in the
// directory of a protected file or above it. It judges what the files
// say, not what they do: a runner configured elsewhere (a path given on
// the command line, an environment variable) is beyond it.
func (s *Snapshot) CheckRunners(changed, protect []string) ([]Violation, error) {
	globs, err := normalizeAll("scope.protect", protect)
	if err != nil || len(globs) == 0 {
		return nil, err
	}
	// The directories of the protected files, with the glob of each.
	goDirs, dirs := map[string]int{}, map[string]int{}
	for p, f := range s.Files {
		if f.Hash == DeletedHash {
			continue
		}
		i := slices.IndexFunc(globs, func(g string) bool { return matchScope(g, p) })
		if i < 0 {
			continue
		}
		d := path.Dir(p)
		if strings.HasSuffix(p, ".go") {
			if j, ok := goDirs[d]; !ok || i < j {
				goDirs[d] = i
			}
		}
		if j, ok := dirs[d]; !ok || i < j {
			dirs[d] = i
		}
	}
	var out []Violation
	for _, p := range changed {
		name, d := path.Base(p), path.Dir(p)
		if s.Existed(p) && slices.ContainsFunc(globs, func(g string) bool { return matchScope(g, p) }) {
			continue // judged as a protected file
		}
		if i, ok := goDirs[d]; ok && strings.HasSuffix(name, ".go") && decidesGoTests(filepath.Join(s.Top, filepath.FromSlash(p))) {
			out = append(out, Violation{Path: p, Rule: stopreasons.RuleProtect, Pattern: protect[i], Change: ChangeRunner})
			continue
		}
		if !slices.Contains(runnerConfigs, name) && !slices.ContainsFunc(runnerConfigPrefixes, func(pre string) bool { return strings.HasPrefix(name, pre) }) {
			continue
		}
		best := -1
		for pd, i := range dirs {
			if (d == "." || pd == d || strings.HasPrefix(pd, d+"/")) && (best < 0 || i < best) {
				best = i
			}
		}
		if best >= 0 {
			out = append(out, Violation{Path: p, Rule: stopreasons.RuleProtect, Pattern: protect[best], Change: ChangeRunner})
		}
	}
	return out, nil
}

// goTestDeciders are what, in a Go file of a package, can end its test
// binary before the tests run, or decide which run.
var goTestDeciders = [][]byte{[]byte("func TestMain("), []byte("func init("), []byte("os.Exit("), []byte("syscall.Exit("), []byte("unix.Exit(")}

// decidesGoTests reports whether the Go file at full holds one of
// goTestDeciders or carries a build constraint. A file that is gone
// decides nothing now.
func decidesGoTests(full string) bool {
	data, err := os.ReadFile(full)
	if err != nil {
		return false
	}
	if slices.ContainsFunc(goTestDeciders, func(d []byte) bool { return bytes.Contains(data, d) }) {
		return true
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if bytes.HasPrefix(line, []byte("package ")) {
			break
		}
		if bytes.HasPrefix(line, []byte("//go:build")) || bytes.HasPrefix(line, []byte("// +build")) {
			return true
		}
	}
	return false
}
