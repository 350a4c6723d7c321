package initcfg

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/task"
)

func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		name   string
		files  map[string]string
		kind   string
		verify string
	}{
		{"go", map[string]string{"go.mod": "module x\n"}, "go", "go test ./..."},
		{"rust", map[string]string{"Cargo.toml": "[package]\n"}, "rust", "cargo test"},
		{"node with a test script", map[string]string{"package.json": `{"scripts": {"test": "vitest run"}}`}, "node", "npm test"},
		{"node with pnpm", map[string]string{"package.json": `{"scripts": {"test": "jest"}}`, "pnpm-lock.yaml": ""}, "node", "pnpm test"},
		{"node with yarn", map[string]string{"package.json": `{"scripts": {"test": "jest"}}`, "yarn.lock": ""}, "node", "yarn test"},
		{"node with npm init's placeholder", map[string]string{"package.json": `{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}`}, "node", ""},
		{"node without scripts", map[string]string{"package.json": `{"name": "x"}`}, "node", ""},
		{"node without a test script, a Makefile with one", map[string]string{"package.json": `{}`, "Makefile": "test:\n\tnode t.js\n"}, "make", "make test"},
		{"python", map[string]string{"pyproject.toml": "[project]\n"}, "python", "python3 -m pytest"},
		{"a Makefile with a test target", map[string]string{"Makefile": "all: build\n\ntest: build\n\t./run-tests\n"}, "make", "make test"},
		{"a test target among others", map[string]string{"Makefile": ".PHONY: lint test\nlint test check:\n\ttrue\n"}, "make", "make test"},
		{"a Makefile without one", map[string]string{"Makefile": "TEST := 1\ntests: x\ntest-short: y\ntest = z\n"}, "", ""},
		{"go before its Makefile", map[string]string{"go.mod": "module x\n", "Makefile": "test:\n\tgo test ./...\n"}, "go", "go test ./..."},
		{"nothing", map[string]string{"README.md": "hi"}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := Detect(project(t, tt.files))
			assert.Equal(t, tt.kind, p.Kind)
			assert.Equal(t, tt.verify, p.Verify)
			if tt.verify == "" {
				assert.NotEmpty(t, p.Note, "no command: the config says why")
			}
		})
	}
}

// What Init writes loads with runr's config loader, without warnings,
// with the verify command and the agent it chose, and the task it wrote
// is one runr reads as milestones.
func TestInitWritesAConfigThatLoads(t *testing.T) {
	for _, files := range []map[string]string{
		{"go.mod": "module x\n"},
		{"package.json": `{"scripts": {"test": "node --test"}}`},
		{"Cargo.toml": ""},
		{"pyproject.toml": ""},
		{"Makefile": "test:\n\ttrue\n"},
		{"Gemfile": "", "pom.xml": ""},
		{},
	} {
		dir := project(t, files)
		res, err := Init(Options{Dir: dir, Environ: []string{"PATH=" + t.TempDir()}})
		require.NoError(t, err)
		assert.True(t, res.TaskWritten)
		assert.False(t, res.AgentFound)

		cfg, err := config.Load(config.LoadOptions{RepoRoot: dir, AgentKinds: agents.Kinds()})
		require.NoError(t, err, "%v", files)
		assert.Empty(t, cfg.Warnings)
		assert.Equal(t, filepath.Join(dir, config.FileName), cfg.File)
		if res.Project.Verify != "" {
			assert.Equal(t, []string{res.Project.Verify}, cfg.Verify.Commands)
		} else {
			assert.Empty(t, cfg.Verify.Commands)
		}
		assert.Equal(t, "claude", cfg.Agent.Kind)
		assert.Equal(t, TaskFile, cfg.Task)
		assert.Equal(t, config.DefaultLockfiles(), cfg.Scope.Lockfiles)
		assert.Equal(t, []string{"runr.yaml", ".github/workflows/**"}, cfg.Scope.Deny)
		assert.False(t, cfg.Checkpoint.Commit)
		// The coverage and require_tests keys are written, the check off,
		// with a profile-writing verify command for Go, Python and Node.
		assert.Equal(t, config.RequireTestsAuto, cfg.Verify.RequireTests)
		assert.Zero(t, cfg.Verify.Coverage.MinChanged)
		written, err := os.ReadFile(filepath.Join(dir, config.FileName))
		require.NoError(t, err)
		assert.Contains(t, string(written), "  require_tests: auto\n")
		assert.Contains(t, string(written), "    min_changed: 0\n")
		switch res.Project.Kind {
		case "go", "python", "node":
			require.NotEmpty(t, res.Project.CoverageVerify, "%v", files)
			assert.Contains(t, string(written), "#   - "+quote(res.Project.CoverageVerify)+"\n")
			assert.Contains(t, res.Project.CoverageVerify, "$RUNR_COVERAGE_DIR/")
		default:
			assert.Empty(t, res.Project.CoverageVerify, "%v", files)
		}
		if len(res.Project.Protect) > 0 {
			assert.Equal(t, res.Project.Protect, cfg.Scope.Protect, "%v", files)
		} else {
			assert.Empty(t, cfg.Scope.Protect, "%v", files)
		}
		for _, g := range cfg.Scope.Protect {
			assert.NoError(t, guard.ValidGlob(g))
		}

		text, err := task.Read(filepath.Join(dir, TaskFile), TaskFile)
		require.NoError(t, err)
		assert.Len(t, task.Goals(text), 2)
	}
}

// The test files of every kind of project found are proposed for
// scope.protect, each glob once.
func TestDetectTestGlobs(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		globs []string
		from  []string
	}{
		{"go", map[string]string{"go.mod": ""}, []string{"**/*_test.go"}, []string{"go.mod"}},
		{"rust", map[string]string{"Cargo.toml": ""}, []string{"tests/**"}, []string{"Cargo.toml"}},
		{"node", map[string]string{"package.json": "{}"}, []string{"**/*.test.*", "**/*.spec.*", "**/__tests__/**"}, []string{"package.json"}},
		{"python", map[string]string{"setup.py": ""}, []string{"tests/**", "**/test_*.py", "**/*_test.py"}, []string{"setup.py"}},
		{"gradle", map[string]string{"build.gradle.kts": ""}, []string{"src/test/**"}, []string{"build.gradle.kts"}},
		{"ruby", map[string]string{"Gemfile": ""}, []string{"spec/**", "test/**"}, []string{"Gemfile"}},
		{"rust and python share tests/", map[string]string{"Cargo.toml": "", "pyproject.toml": ""},
			[]string{"tests/**", "**/test_*.py", "**/*_test.py"}, []string{"Cargo.toml", "pyproject.toml"}},
		{"a Makefile only", map[string]string{"Makefile": "test:\n\ttrue\n"}, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := Detect(project(t, tt.files))
			assert.Equal(t, tt.globs, p.Protect)
			assert.Equal(t, tt.from, p.ProtectFrom)
		})
	}
}

func TestInitChoosesTheAgentOnPath(t *testing.T) {
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "codex"), []byte("#!/bin/sh\n"), 0o755))
	dir := project(t, nil)
	res, err := Init(Options{Dir: dir, Environ: []string{"PATH=" + bin}})
	require.NoError(t, err)
	assert.Equal(t, "codex", res.Agent)
	assert.True(t, res.AgentFound)
	cfg, err := config.Load(config.LoadOptions{RepoRoot: dir, AgentKinds: agents.Kinds()})
	require.NoError(t, err)
	assert.Equal(t, "codex", cfg.Agent.Kind)
}

func TestInitRefusesToOverwriteWithoutForce(t *testing.T) {
	dir := project(t, map[string]string{"runr.yaml": "mine\n", "go.mod": "module x\n"})
	_, err := Init(Options{Dir: dir})
	assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
	assert.ErrorContains(t, err, "runr.yaml already exists")
	assert.ErrorContains(t, err, "--force")
	got, _ := os.ReadFile(filepath.Join(dir, "runr.yaml"))
	assert.Equal(t, "mine\n", string(got))
	assert.NoFileExists(t, filepath.Join(dir, TaskFile), "a refusal writes nothing")

	res, err := Init(Options{Dir: dir, Force: true})
	require.NoError(t, err)
	assert.True(t, res.Replaced)
	got, _ = os.ReadFile(filepath.Join(dir, "runr.yaml"))
	assert.Contains(t, string(got), `"go test ./..."`)
}

func TestInitKeepsAnExistingTask(t *testing.T) {
	dir := project(t, map[string]string{"TASK.md": "- [ ] my own\n"})
	res, err := Init(Options{Dir: dir})
	require.NoError(t, err)
	assert.False(t, res.TaskWritten)
	got, _ := os.ReadFile(filepath.Join(dir, TaskFile))
	assert.Equal(t, "- [ ] my own\n", string(got))
}

// A symlink planted at either name is refused, with --force too, and the
// file it points to is left alone.
func TestInitRefusesSymlinks(t *testing.T) {
	for _, name := range []string{"runr.yaml", TaskFile} {
		for _, force := range []bool{false, true} {
			dir := project(t, nil)
			outside := filepath.Join(t.TempDir(), "victim")
			require.NoError(t, os.WriteFile(outside, []byte("keep\n"), 0o644))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, name)))
			_, err := Init(Options{Dir: dir, Force: force})
			assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err), "%s force=%v", name, force)
			assert.ErrorContains(t, err, "symbolic link")
			got, _ := os.ReadFile(outside)
			assert.Equal(t, "keep\n", string(got))

			// A dangling link would create its target.
			dangling := filepath.Join(t.TempDir(), "new")
			require.NoError(t, os.Remove(filepath.Join(dir, name)))
			require.NoError(t, os.Symlink(dangling, filepath.Join(dir, name)))
			_, err = Init(Options{Dir: dir, Force: force})
			assert.Error(t, err)
			assert.NoFileExists(t, dangling)
		}
	}
}

// createFile never replaces what appears at the name after the check.
func TestCreateFileDoesNotReplace(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	path := filepath.Join(dir, "runr.yaml")
	require.NoError(t, os.Symlink(outside, path))
	assert.ErrorIs(t, createFile(path, []byte("x")), os.ErrExist)
	assert.NoFileExists(t, outside)
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file is left")
}
