package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolchain is a real test toolchain runr's coverage check is tried with:
// a small project with one tested function, the verify command that
// writes a coverage profile under $RUNR_COVERAGE_DIR, and what an agent
// adds: a new function, its test, and a test that never calls it.
type toolchain struct {
	name    string
	needs   func() error // nil when the toolchain is installed
	project map[string]string
	verify  string
	// The agent's work: the new function's file, and the test files of
	// each variant.
	added     map[string]string
	tested    map[string]string
	notCalled map[string]string
	// newFile is the new function's file, whose body the feedback names.
	newFile string
}

// Each project ignores .home/, the private HOME the end-to-end tests give
// runr and its children inside the repository (testEnv), where the
// toolchains keep their own files.

// Debian's python3 is where python3-pytest and python3-coverage install;
// it need not be the first python3 on PATH.
const debianPython = "/usr/bin/python3"

var toolchains = []toolchain{
	{
		name:  "go",
		needs: func() error { _, err := exec.LookPath("go"); return err },
		project: map[string]string{
			"go.mod":            "module example.com/calc\n\ngo 1.22\n",
			"calc/add.go":       "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
			"calc/add_test.go":  "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
			".gitignore":        ".home/\n",
			"calc/doc/notes.md": "notes\n",
		},
		verify:    `go test -coverprofile="$RUNR_COVERAGE_DIR/go.out" ./...`,
		added:     map[string]string{"calc/twice.go": "package calc\n\n// Twice doubles.\nfunc Twice(a int) int {\n\tif a > 100 {\n\t\treturn 0\n\t}\n\treturn 2 * a\n}\n"},
		tested:    map[string]string{"calc/twice_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(2) != 4 || Twice(200) != 0 {\n\t\tt.Fatal(\"Twice\")\n\t}\n}\n"},
		notCalled: map[string]string{"calc/twice_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestTwiceLater(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n"},
		newFile:   "calc/twice.go",
	},
	{
		name: "python",
		needs: func() error {
			out, err := exec.Command(debianPython, "-c", "import pytest, coverage").CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s cannot import pytest and coverage (install python3-pytest and python3-coverage: make toolchains): %v: %s", debianPython, err, out)
			}
			return nil
		},
		project: map[string]string{
			"calc.py":      "def add(a, b):\n    return a + b\n",
			"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
			".gitignore":   "__pycache__/\n.home/\n",
		},
		verify: `export PYTHONDONTWRITEBYTECODE=1 COVERAGE_FILE="$RUNR_COVERAGE_DIR/.coverage" && ` +
			debianPython + ` -m coverage run --source=. -m pytest -q -p no:cacheprovider && ` +
			debianPython + ` -m coverage lcov -q -o "$RUNR_COVERAGE_DIR/py.lcov"`,
		added:     map[string]string{"twice.py": "def twice(a):\n    if a > 100:\n        return 0\n    return 2 * a\n"},
		tested:    map[string]string{"test_twice.py": "from twice import twice\n\n\ndef test_twice():\n    assert twice(2) == 4\n    assert twice(200) == 0\n"},
		notCalled: map[string]string{"test_twice.py": "from calc import add\n\n\ndef test_twice_later():\n    assert add(2, 2) == 4\n"},
		newFile:   "twice.py",
	},
	{
		name: "node",
		needs: func() error {
			out, err := exec.Command("/usr/bin/node", "-e", `const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=11)?0:1)`).CombinedOutput()
			if err != nil {
				return fmt.Errorf("/usr/bin/node 20.11 or later, with the lcov test reporter, is needed: %v: %s", err, out)
			}
			return nil
		},
		project: map[string]string{
			"calc.js":           "function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n",
			"test/calc.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc.js');\n\ntest('add', () => {\n  assert.strictEqual(add(1, 2), 3);\n});\n",
			".gitignore":        ".home/\n",
		},
		verify: `/usr/bin/node --test --experimental-test-coverage --test-reporter=lcov --test-reporter-destination="$RUNR_COVERAGE_DIR/lcov.info" ` +
			`--test-reporter=spec --test-reporter-destination=stdout`,
		added:     map[string]string{"twice.js": "function twice(a) {\n  if (a > 100) {\n    return 0;\n  }\n  return 2 * a;\n}\n\nmodule.exports = { twice };\n"},
		tested:    map[string]string{"test/twice.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { twice } = require('../twice.js');\n\ntest('twice', () => {\n  assert.strictEqual(twice(2), 4);\n  assert.strictEqual(twice(200), 0);\n});\n"},
		notCalled: map[string]string{"test/twice.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc.js');\n\ntest('later', () => {\n  assert.strictEqual(add(2, 2), 4);\n});\n"},
		newFile:   "twice.js",
	},
}

// requireToolchain skips a test whose toolchain is missing, except where
// the toolchains must be there (CI, or RUNR_TEST_TOOLCHAINS=1 as .ci/run
// sets after make toolchains): there a missing one fails the test.
func requireToolchain(t *testing.T, tc toolchain) {
	t.Helper()
	err := tc.needs()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("RUNR_TEST_TOOLCHAINS") != "" {
		t.Fatalf("%s toolchain: %v", tc.name, err)
	}
	t.Skipf("%s toolchain not installed (make toolchains installs it): %v", tc.name, err)
}

// agentScript is a command agent that saves each prompt it is given and
// writes files into the work tree, the same on every call.
func agentScript(t *testing.T, files map[string]string) (script, prompts string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for name, text := range files {
		p := filepath.Join(src, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	prompts = filepath.Join(dir, "prompts")
	require.NoError(t, os.MkdirAll(prompts, 0o755))
	script = filepath.Join(dir, "agent.sh")
	body := fmt.Sprintf("#!/bin/sh\ncat > %q/prompt-$RUNR_ITERATION.md\ncp -R %q/. .\necho 'RUNR_STATUS: done'\n", prompts, src)
	require.NoError(t, os.WriteFile(script, []byte(body), 0o755))
	return script, prompts
}

// project is a committed repository holding the toolchain's project, its
// task and its runr.yaml.
func project(t *testing.T, files map[string]string, yaml string) string {
	t.Helper()
	repo := newRepo(t)
	all := map[string]string{"TASK.md": "- [ ] add twice\n", "runr.yaml": yaml}
	for k, v := range files {
		all[k] = v
	}
	for name := range all {
		require.NoError(t, os.MkdirAll(filepath.Join(repo, filepath.Dir(name)), 0o755))
	}
	writeCommitted(t, repo, all)
	return repo
}

func coverageYAML(verify string) string {
	return fmt.Sprintf("verify:\n  commands: [%s]\n  coverage:\n    min_changed: 0.8\nstop:\n  max_milestone_retries: 1\n", quoteYAML(verify))
}

func quoteYAML(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Real toolchains: an agent that adds a function and its test is
// approved; one that adds it with no test, or with a test that never
// calls it, is told the lines no verify command ran on its second call,
// then the run stops with changes_not_tested (16), the figure and the
// ranges in state.json, stop.json, runr logs and doctor.
func TestCoverageOfChangedLines(t *testing.T) {
	t.Parallel()
	for _, tc := range toolchains {
		for _, v := range []struct {
			name  string
			files map[string]string
			ok    bool
		}{
			{"function and its test", merged(tc.added, tc.tested), true},
			{"function without a test", tc.added, false},
			{"a test that never calls it", merged(tc.added, tc.notCalled), false},
		} {
			t.Run(tc.name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				requireToolchain(t, tc)
				repo := project(t, tc.project, coverageYAML(tc.verify))
				script, prompts := agentScript(t, v.files)
				code, out, errOut := runrCmd(t, repo, "run", "--task", "TASK.md", "--", script)
				if v.ok {
					require.Equal(t, 0, code, "stdout: %s\nstderr: %s", out, errOut)
					return
				}
				require.Equal(t, 16, code, "stdout: %s\nstderr: %s", out, errOut)
				checkUntested(t, repo, prompts, "coverage", tc.newFile)
			})
		}
	}
}

// checkUntested asserts a changes_not_tested stop of the kind, and for
// coverage that file is named with its lines everywhere a person or the
// agent looks.
func checkUntested(t *testing.T, repo, prompts, kind, file string) {
	t.Helper()
	st := readState(t, repo)
	assert.Equal(t, []string{"failed", "failed"}, attemptOutcomes(st, 0))
	reason := st["stop_reason"].(map[string]any)
	assert.Equal(t, "changes_not_tested", reason["code"])
	details := reason["details"].(map[string]any)
	assert.Equal(t, kind, details["kind"])

	dir, err := latestRunDir(repo)
	require.NoError(t, err)
	stopJSON, err := os.ReadFile(filepath.Join(dir, "stop.json"))
	require.NoError(t, err)
	second, err := os.ReadFile(filepath.Join(prompts, "prompt-2.md"))
	require.NoError(t, err)
	_, logs, _ := runrCmd(t, repo, "logs", "latest")
	_, doctor, _ := runrCmd(t, repo, "doctor", "latest")

	if kind == "no_tests" {
		assert.Contains(t, string(second), "ran no test")
		assert.Contains(t, doctor, "without running any test")
		return
	}
	uncovered := details["uncovered"].([]any)
	require.Len(t, uncovered, 1, "%v", details)
	u := uncovered[0].(map[string]any)
	assert.Equal(t, file, u["file"])
	lines := u["lines"].(string)
	assert.NotEmpty(t, lines)
	assert.Less(t, details["covered"].(float64), 0.8)
	assert.Equal(t, 0.8, details["min_changed"])

	named := fmt.Sprintf("%s: lines %s", file, lines)
	assert.Contains(t, string(second), named, "the second call's prompt names the lines not run")
	assert.NotContains(t, readFileOr(filepath.Join(prompts, "prompt-1.md")), "lines not run")
	assert.Contains(t, string(stopJSON), `"lines": "`+lines+`"`)
	assert.Contains(t, logs, "changed executable lines")
	assert.Contains(t, doctor, file+" lines "+lines)
	assert.Contains(t, doctor, "$ runr resume")
}

func readFileOr(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// A verify that runs no test is a failed attempt, and then
// changes_not_tested with kind no_tests; with require_tests off the run
// completes as before.
func TestVerifyThatRanNoTest(t *testing.T) {
	t.Parallel()
	goTC, nodeTC := toolchains[0], toolchains[2]
	tests := []struct {
		name    string
		tc      toolchain
		verify  string
		require string
		code    int
	}{
		{"go test -run NoSuchTest", goTC, "go test -run NoSuchTest ./...", "auto", 16},
		{"node --test without a test file", nodeTC, "mkdir -p empty && cd empty && /usr/bin/node --test", "auto", 16},
		{"require_tests off", goTC, "go test -run NoSuchTest ./...", "off", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireToolchain(t, tt.tc)
			yaml := fmt.Sprintf("verify:\n  commands: [%s]\n  require_tests: %s\nstop:\n  max_milestone_retries: 1\n", quoteYAML(tt.verify), tt.require)
			repo := project(t, tt.tc.project, yaml)
			script, prompts := agentScript(t, merged(tt.tc.added, tt.tc.tested))
			code, out, errOut := runrCmd(t, repo, "run", "--task", "TASK.md", "--", script)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", out, errOut)
			if tt.code == 16 {
				checkUntested(t, repo, prompts, "no_tests", "")
				assert.True(t, strings.Contains(readFileOr(filepath.Join(prompts, "prompt-2.md")), "reported 0 tests run"))
			}
		})
	}
}

// A profile the verify writes into the work tree is runr's, not the
// agent's: after each verify it is gone, so the next call's scope guard
// never judges it (scope.allow holds only the code) and no commit takes it.
func TestWorkTreeProfileIsNotTheAgents(t *testing.T) {
	t.Parallel()
	tc := toolchains[0]
	requireToolchain(t, tc)
	yaml := "verify:\n  commands: [\"go test -coverprofile=cover.out ./...\"]\n  coverage:\n    profiles: [cover.out]\n    min_changed: 0.8\n" +
		"scope:\n  allow: [\"calc/**\"]\ncheckpoint:\n  commit: true\nstop:\n  max_milestone_retries: 1\n"
	repo := project(t, tc.project, yaml)
	script, prompts := agentScript(t, merged(tc.added, tc.notCalled))
	code, out, errOut := runrCmd(t, repo, "run", "--task", "TASK.md", "--", script)
	require.Equal(t, 16, code, "stdout: %s\nstderr: %s", out, errOut)
	checkUntested(t, repo, prompts, "coverage", tc.newFile)
	assert.NoFileExists(t, filepath.Join(repo, "cover.out"))
}
