package initcfg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/coverage"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// TaskFile is the task template's name, in the repository root.
const TaskFile = "TASK.md"

// Options say where Init writes and what it may replace.
type Options struct {
	Dir     string   // the repository root
	Force   bool     // replace an existing runr.yaml
	Environ []string // where the agent CLI is looked up (PATH)
	// Show names a path in messages (relative to the working directory,
	// say); nil shows it as it is.
	Show func(path string) string
}

// Result says what Init wrote.
type Result struct {
	Config      string // the path of runr.yaml
	Task        string // the path of TASK.md
	TaskWritten bool   // false: TASK.md existed and was kept
	Replaced    bool   // runr.yaml existed and was replaced (Force)
	Project     Project
	Agent       string
	AgentFound  bool
}

// Init writes runr.yaml in opts.Dir for the project found there, and a
// TASK.md template when there is none. An existing runr.yaml is replaced
// only with Force; TASK.md never is. A symlink at either name is refused,
// Force or not: a planted link must not redirect the write. Each file is
// written whole or not at all (a temporary file, linked or renamed into
// place). Errors are usage_error for a refusal, environment_invalid for a
// write that failed.
func Init(opts Options) (*Result, error) {
	show := opts.Show
	if show == nil {
		show = func(p string) string { return p }
	}
	res := &Result{
		Config:  filepath.Join(opts.Dir, config.FileName),
		Task:    filepath.Join(opts.Dir, TaskFile),
		Project: Detect(opts.Dir),
	}
	res.Agent, res.AgentFound = Agent(opts.Environ)

	cfgExists, err := checkTarget(res.Config, show)
	if err != nil {
		return nil, err
	}
	if cfgExists && !opts.Force {
		return nil, exists(show(res.Config))
	}
	taskExists, err := checkTarget(res.Task, show)
	if err != nil {
		return nil, err
	}

	data := []byte(Render(res.Project, res.Agent, res.AgentFound))
	if cfgExists {
		err = replaceFile(res.Config, data)
		res.Replaced = true
	} else {
		err = createFile(res.Config, data)
	}
	if errors.Is(err, fs.ErrExist) {
		return nil, exists(show(res.Config)) // created since it was checked
	}
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "write %s", show(res.Config))
	}
	if !taskExists {
		err := createFile(res.Task, []byte(TaskTemplate))
		switch {
		case errors.Is(err, fs.ErrExist):
		case err != nil:
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "write %s", show(res.Task))
		default:
			res.TaskWritten = true
		}
	}
	return res, nil
}

func exists(path string) error {
	return stopreasons.Errorf(stopreasons.UsageError,
		"%s already exists: runr init does not overwrite it; pass --force to replace it (TASK.md is kept either way)", path)
}

// checkTarget reports whether path exists as a regular file; a symlink,
// a directory or any other kind of file there is refused.
func checkTarget(path string, show func(string) string) (bool, error) {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "check %s", show(path))
	case info.Mode()&fs.ModeSymlink != 0:
		return false, stopreasons.Errorf(stopreasons.UsageError,
			"%s is a symbolic link: runr init never writes through one (it could point anywhere); remove the link and run runr init again", show(path))
	case !info.Mode().IsRegular():
		return false, stopreasons.Errorf(stopreasons.UsageError,
			"%s exists and is not a regular file: move it away and run runr init again", show(path))
	}
	return true, nil
}

// writeTemp writes data to a new temporary file beside path and returns
// its name; the caller puts it in place or removes it.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// createFile puts data at path, which must not exist: the temporary file
// is hard-linked to path, which fails on anything already there (a symlink
// included) and is never seen half-written. Where the file system has no
// hard links, path is created with O_EXCL|O_NOFOLLOW instead.
func createFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		if err == nil {
			err = syncDir(filepath.Dir(path))
		}
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// replaceFile renames a temporary file over path: rename replaces a
// symlink rather than following it, and a reader sees the old file or the
// new one.
func replaceFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// quote writes s as a YAML double-quoted scalar.
func quote(s string) string {
	return strconv.Quote(s)
}

// Render is the runr.yaml Init writes for project p and agent kind.
func Render(p Project, kind string, found bool) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# runr.yaml, written by 'runr init'. runr's docs/configuration.md documents\n")
	w("# every key, and its configs/runr.example.yaml lists them all with their\n")
	w("# defaults. A key left out keeps its default; a key runr does not know is an\n")
	w("# error. RUNR_* variables and flags override this file.\n\n")

	w("agent:\n")
	w("  # The agent CLI: %s.\n", strings.Join(agents.Kinds(), " | "))
	if found {
		w("  # %s was found on PATH.\n", kind)
	} else {
		w("  # No agent CLI was found on PATH: install %s, or name the one you use.\n", kind)
	}
	w("  # For any other program: kind: command, and its argv under command:\n")
	w("  # (e.g. command: [./my-agent.sh, \"{prompt_file}\"]).\n")
	w("  kind: %s\n", kind)
	w("  # Longest one agent call may run (worker_timeout, exit 32).\n")
	w("  timeout: 20m\n\n")

	w("# The task: each unchecked \"- [ ] ...\" item is one milestone, worked in order.\n")
	w("task: %s\n\n", TaskFile)

	w("verify:\n")
	w("  # Shell commands (sh -c) run after each agent call; a milestone is approved\n")
	w("  # only when every one exits 0. With none (and no review), milestones are\n")
	w("  # approved on the agent's word.\n")
	switch {
	case p.Verify != "":
		w("  # Chosen from %s.\n", p.Marker)
		w("  commands:\n    - %s\n", quote(p.Verify))
	default:
		w("  # %s.\n", p.Note)
		w("  commands: []\n")
	}
	w("  timeout: 10m\n")
	w("  # A passing verify in whose output every test runner runr recognises\n")
	w("  # (go test, pytest, cargo test, node --test, Jest, Vitest) reports that no\n")
	w("  # test ran is a failed attempt, and out of retries changes_not_tested\n")
	w("  # (exit 16): auto | on (also when no runner is recognised) | off.\n")
	w("  require_tests: auto\n")
	w("  coverage:\n")
	w("    # The share (0 to 1) of each milestone's changed executable lines that\n")
	w("    # verify must run (changes_not_tested, exit 16); 0 turns it off. The\n")
	w("    # verify commands write coverage profiles (Go, LCOV, Cobertura XML) under\n")
	w("    # $%s, which runr empties before each verify and reads after.\n", coverage.DirVar)
	if p.CoverageVerify != "" {
		w("    # For this project, list this verify command instead of the one above:\n")
		w("    #   - %s\n", quote(p.CoverageVerify))
	}
	w("    # profiles: more profiles, as globs relative to the work tree.\n")
	w("    profiles: []\n")
	w("    min_changed: 0\n\n")

	w("scope:\n")
	w("  # Globs of the files the agent may change; empty: every file not denied.\n")
	w("  # E.g. allow: [\"src/**\", \"tests/**\"].\n")
	w("  allow: []\n")
	w("  # Globs the agent must not change (guard_violation, exit 2): its own stop\n")
	w("  # rules, and the CI workflows that run with the repository's secrets.\n")
	w("  deny:\n    - runr.yaml\n    - \".github/workflows/**\"\n")
	w("  # Existing files the agent may not modify, delete or rename (guard_violation,\n")
	w("  # exit 2, rule protect); new files that match may be added. The cheapest way\n")
	w("  # to make a failing test pass is to weaken the test: protect the tests.\n")
	w("  # The trade-off: a protected file cannot be edited at all, so a task that\n")
	w("  # adds a case to an existing test file stops at its first such change.\n")
	w("  # For such a task pass --no-protect (this run only), or remove the glob\n")
	w("  # here; --protect GLOB or RUNR_SCOPE_PROTECT replace this list for one run.\n")
	if len(p.Protect) > 0 {
		w("  # The test files of %s.\n", strings.Join(p.ProtectFrom, ", "))
		w("  protect:\n")
		for _, g := range p.Protect {
			w("    - %s\n", quote(g))
		}
	} else {
		w("  # E.g. protect: [\"tests/**\"].\n")
		w("  protect: []\n")
	}
	w("  # Files that change only with dependencies (lockfile_violation, exit 3,\n")
	w("  # unless runr run --allow-deps).\n")
	w("  lockfiles:\n")
	for _, l := range config.DefaultLockfiles() {
		w("    - %s\n", l)
	}
	w("\n")

	w("checkpoint:\n")
	w("  # true: commit each approved milestone. false: the changes are left in the\n")
	w("  # working tree for you to review and commit (runr run --worktree always\n")
	w("  # commits, on its own branch).\n")
	w("  commit: false\n\n")

	w("budget:\n")
	w("  # The run stops when one of these is spent; 0 turns a limit off.\n")
	w("  time: 30m            # timeout, exit 124\n")
	w("  max_ticks: 200       # max_ticks, exit 125\n")
	w("  max_cost_usd: 0      # budget_exceeded, exit 127; e.g. 5\n\n")

	w("stop:\n")
	w("  # Failed attempts per milestone before the run stops (docs/stop-conditions.md\n")
	w("  # has every rule).\n")
	w("  max_milestone_retries: 3\n")
	return b.String()
}

// The template's milestones, which say to replace them.
const (
	templateFirst = "Replace this line with the first milestone: one change that verify can check"
	templateNext  = "Replace this line with the next milestone, or delete it"
)

// TemplateWarning says that task text still holds an unchecked milestone
// of the TASK.md template, which an agent would take as its work; "" when
// it holds none.
func TemplateWarning(text string) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "- [ ] "+templateFirst || line == "- [ ] "+templateNext {
			return "the task still holds the milestones of runr init's template (\"" + templateFirst + "\"): write your milestones in it before a run"
		}
	}
	return ""
}

// TaskTemplate is the TASK.md Init writes when there is none.
const TaskTemplate = `# Task

<!--
Written by 'runr init'. Say what the agent should do, then list the steps
as unchecked boxes: each "- [ ] ..." item is one milestone, worked in order
(implement, verify, review, checkpoint); checked "- [x]" items are skipped.
Lines indented under an item belong to it. runr reads this file once, when
a run starts, and never edits it.
-->

Describe the change you want, the constraints the agent must respect, and
how to tell that the work is done.

- [ ] ` + templateFirst + `
- [ ] ` + templateNext + `
`
