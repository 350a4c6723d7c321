// Package guard keeps an agent inside the part of a git repository it was
// given. It reads the working tree through the git binary (status, a content
// hash of the whole tree, the repository's root and common dir), judges changed
// paths against scope globs and lockfile names, decides whether two runs'
// claims can touch the same files, and makes the worktrees and checkpoint
// commits of a run. It never writes the user's index or git config.
package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runr-dev/runr/internal/proc"
)

// Sentinel errors, so that callers can map them to their stop reasons with
// errors.Is (this package does not know the registry).
var (
	// ErrNotRepository: the directory is not inside a git working tree.
	ErrNotRepository = errors.New("not a git repository")
	// ErrNoCommits: the operation needs a commit and the repository has none.
	ErrNoCommits = errors.New("the repository has no commits")
	// ErrBadGlob: a scope or lockfile pattern is not a valid glob.
	ErrBadGlob = errors.New("invalid glob")
	// ErrGitMissing: the git program cannot be found or run.
	ErrGitMissing = errors.New("git not found")
)

// gitError is a git command that ran and failed; it keeps the exit code so
// that callers can tell "no" (exit 1 of check-ignore, rev-parse --verify) from
// a real failure.
type gitError struct {
	args   []string
	dir    string
	code   int
	stderr string
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.code)
	}
	return fmt.Sprintf("git %s (in %s): %s", strings.Join(e.args, " "), e.dir, msg)
}

// gitKillGrace is how long a cancelled git gets between SIGTERM and SIGKILL,
// and how long a finished one may hold its pipes open through a leftover
// child (a credential helper, a hook).
const gitKillGrace = 5 * time.Second

// gitStderrKeep bounds the stderr kept for a failed git's message.
const gitStderrKeep = 16 << 10

// gitCmd describes one git invocation.
type gitCmd struct {
	dir   string
	args  []string
	env   []string // extra KEY=VALUE entries, winning over the inherited ones
	stdin io.Reader
	// drivers, when set, are the driver overrides to use, known to be
	// current (a Tracker keeps them); else they are read before a command
	// that may run a driver.
	drivers *[][2]string
}

// safeConfig turns off, for every git runr runs, each way a repository (its
// .git/config, its hooks, files an agent can write) gets git to start a
// program: hooks (post-index-change runs on any index write), an fsmonitor
// program, external diff, credential helpers, remote transports, pagers and
// editors, automatic gc and maintenance (which run hooks and detach). The
// untracked cache is off so that reading commands write nothing. Filter and
// diff drivers have names, so they are turned off per name (driverOverrides).
var safeConfig = []string{
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.pager=cat",
	"-c", "core.editor=:",
	"-c", "sequence.editor=:",
	"-c", "core.askPass=",
	"-c", "core.sshCommand=",
	"-c", "credential.helper=",
	"-c", "protocol.allow=never",
	"-c", "diff.external=",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "commit.gpgSign=false",
}

// safeEnv is the environment part of safeConfig: what git reads from the
// environment before its config.
var safeEnv = []string{"LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_EDITOR=:", "GIT_ASKPASS=", "SSH_ASKPASS="}

// run executes git and returns its stdout. The locale is fixed so messages
// and output are predictable, optional locks are off so that reading commands
// never rewrite the index behind the user's back, git never prompts, and no
// program the repository names runs (safeConfig, driverOverrides). Git runs
// in its own process group like every process runr starts, so a Ctrl+C at
// the terminal reaches it only through ctx; when ctx ends, the whole group is
// stopped.
func (c gitCmd) run(ctx context.Context) ([]byte, error) {
	if mayRunDrivers(c.args) {
		var over [][2]string
		if c.drivers != nil {
			over = *c.drivers
		} else {
			var err error
			if over, _, err = driverOverrides(ctx, c.dir); err != nil {
				return nil, err
			}
		}
		c.env = append(slices.Clone(c.env), configEnv(over)...)
	}
	return c.exec(ctx, append(slices.Clone(safeConfig), c.args...))
}

// configEnv passes config pairs through GIT_CONFIG_COUNT and friends, after
// any the environment already holds: unlike -c, a key there may hold any
// byte, "=" included, so a driver's name cannot break out of its key.
func configEnv(pairs [][2]string) []string {
	if len(pairs) == 0 {
		return nil
	}
	n, _ := strconv.Atoi(os.Getenv("GIT_CONFIG_COUNT"))
	var env []string
	for i, kv := range pairs {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n+i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, kv[1]))
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+len(pairs)))
}

// exec runs git with exactly args (after the safe environment), naming
// the git dirs pinned for c.dir, if any.
func (c gitCmd) exec(ctx context.Context, args []string) ([]byte, error) {
	env := append(os.Environ(), safeEnv...)
	var stdout bytes.Buffer
	res, err := proc.Run(ctx, proc.Spec{
		Argv:      append([]string{"git"}, args...),
		Dir:       c.dir,
		Env:       slices.Concat(env, c.env, pinnedEnv(c.dir)),
		Stdin:     c.stdin,
		Stdout:    &stdout,
		KillGrace: gitKillGrace,
		TailBytes: gitStderrKeep,
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("git %s (in %s): %w", strings.Join(c.args, " "), c.dir, ctxErr)
		}
		if errors.Is(err, proc.ErrNotFound) {
			return nil, fmt.Errorf("%w: runr needs git on PATH; install git and try again", ErrGitMissing)
		}
		return nil, fmt.Errorf("run git %s (in %s): %w", strings.Join(c.args, " "), c.dir, err)
	}
	if res.ExitCode == 0 {
		return stdout.Bytes(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil && res.Canceled {
		return nil, fmt.Errorf("git %s (in %s): %w", strings.Join(c.args, " "), c.dir, ctxErr)
	}
	if res.Signal != "" {
		return nil, fmt.Errorf("git %s (in %s): ended by signal %s", strings.Join(c.args, " "), c.dir, res.Signal)
	}
	return stdout.Bytes(), &gitError{args: c.args, dir: c.dir, code: res.ExitCode, stderr: string(res.Tail)}
}

// pinned holds, per working tree, the git dirs every git call runr runs
// there names explicitly (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE), so that
// git does not look for them through the tree's .git entry: in a linked
// worktree that is a file an agent can rewrite, to point git at a git dir
// of its own making, with its own config, hooks and HEAD.
var pinned struct {
	sync.RWMutex
	dirs map[string]pinnedDirs
}

type pinnedDirs struct{ top, gitDir, common string }

// Pin makes every later git call of this process in the snapshot's working
// tree, and in each of dirs (other names of its root, as callers pass it),
// name the git dir and common dir the snapshot recorded at the start of the
// run, with the root as the work tree. It starts no process. A snapshot that
// recorded no git dirs (an older runr's) pins nothing.
func (s *Snapshot) Pin(dirs ...string) {
	if s.Top == "" || s.GitDir == "" || s.CommonDir == "" {
		return
	}
	p := pinnedDirs{top: s.Top, gitDir: s.GitDir, common: s.CommonDir}
	pinned.Lock()
	defer pinned.Unlock()
	if pinned.dirs == nil {
		pinned.dirs = map[string]pinnedDirs{}
	}
	for _, d := range append([]string{s.Top}, dirs...) {
		if d != "" {
			pinned.dirs[filepath.Clean(d)] = p
		}
	}
}

// pinnedEnv is the environment that names the git dirs pinned for dir,
// exactly as given (a subdirectory, which git would search upwards from, is
// not pinned; runr runs git at the root), or nil.
func pinnedEnv(dir string) []string {
	if dir == "" {
		return nil
	}
	pinned.RLock()
	p, ok := pinned.dirs[filepath.Clean(dir)]
	pinned.RUnlock()
	if !ok {
		return nil
	}
	return []string{"GIT_DIR=" + p.gitDir, "GIT_COMMON_DIR=" + p.common, "GIT_WORK_TREE=" + p.top}
}

// driverlessCommands never run a filter, diff or merge driver: they never
// compare the work tree's content with the index (hash-object is always
// called with --no-filters; diff-tree only with --name-only). Anything else,
// write-tree and commit included (an index that looks stale is refreshed
// through the clean filter), gets driverOverrides first.
var driverlessCommands = []string{"rev-parse", "config", "ls-files", "ls-tree", "diff-tree", "check-ignore", "hash-object"}

// mayRunDrivers reports whether the git command args may run a filter or
// diff driver, so that driverOverrides must turn them off first.
func mayRunDrivers(args []string) bool {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		if args[i] == "worktree" && i+1 < len(args) && args[i+1] == "list" {
			return false
		}
		return !slices.Contains(driverlessCommands, args[i])
	}
	return false
}

// driverOverrides returns config pairs that empty every filter driver
// (clean, smudge, process), diff driver (command, textconv) and merge driver
// that the repository's own config defines (scope local or worktree, and
// whatever those files include), and make a "required" filter optional, so
// git stores and compares the bytes as they are. Drivers from the user's
// global and system config (where `git lfs install` puts its filter) stay: an
// agent that can rewrite those can rewrite the user's shell profile too.
//
// It also returns the files those drivers can come from: every file the
// repository's own config was read from, and every file it includes (found
// or not), as absolute paths. While none of them changes, the overrides
// stay right (a Tracker reuses them on that condition).
func driverOverrides(ctx context.Context, dir string) (over [][2]string, sources []string, err error) {
	drivers.Lock()
	defer drivers.Unlock()
	if c, ok := drivers.dirs[dir]; ok && c.fresh() {
		return c.over, c.sources, nil
	}
	over, sources, read, err := readDriverOverrides(ctx, dir)
	if err != nil || len(sources) == 0 {
		// Without a file to watch, nothing would tell a later config
		// from this one.
		return over, sources, err
	}
	c := driverRead{over: over, sources: sources, excludesFile: read.excludesFile, hashes: map[string]string{}}
	for _, f := range slices.Concat(sources, read.files, repoLocationFiles(dir)) {
		c.hashes[f] = fileHash(f)
	}
	if drivers.dirs == nil {
		drivers.dirs = map[string]driverRead{}
	}
	drivers.dirs[dir] = c
	return over, sources, nil
}

// Prefetch reads, in the background, what the first git calls in the
// working tree at dir wait for before they can start: the repository's
// config, for its drivers and core.excludesFile, kept as driverOverrides
// keeps it. The returned function waits for the read; a failure is left
// for those calls to meet again.
func Prefetch(ctx context.Context, dir string) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = driverOverrides(ctx, dir)
	}()
	return func() { <-done }
}

// repoLocationFiles are the files through which git finds the repository
// of dir and its config, whether or not they exist: the .git file or
// directory, the git dir's commondir file, and the worktree config files,
// which git reads only when present. An agent that writes one of them can
// make git read another config without touching the files it came from.
func repoLocationFiles(dir string) []string {
	dotgit := filepath.Join(dir, ".git")
	gitDir := dotgit
	if data, err := os.ReadFile(dotgit); err == nil { // a worktree's "gitdir: PATH"
		if p, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: "); ok {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			gitDir = p
		}
	}
	common := gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		p := strings.TrimSpace(string(data))
		if !filepath.IsAbs(p) {
			p = filepath.Join(gitDir, p)
		}
		common = p
	}
	return []string{dotgit, filepath.Join(gitDir, "commondir"), filepath.Join(gitDir, "config.worktree"),
		filepath.Join(common, "config"), filepath.Join(common, "config.worktree")}
}

// drivers remembers each directory's driver overrides with the content of
// the files they came from: while none changed, they stay right, and the
// git commands of one runr ask git's config once instead of once each.
var drivers struct {
	sync.Mutex
	dirs map[string]driverRead
}

type driverRead struct {
	over         [][2]string
	sources      []string
	excludesFile string
	hashes       map[string]string // every file read, and the includes
}

// coreExcludesFile is core.excludesFile as git reads it in dir ("" unset),
// from the config read driverOverrides keeps when it can.
func coreExcludesFile(ctx context.Context, dir string) (string, error) {
	if _, _, err := driverOverrides(ctx, dir); err == nil {
		drivers.Lock()
		c, ok := drivers.dirs[dir]
		drivers.Unlock()
		if ok {
			return c.excludesFile, nil
		}
	}
	return configValue(ctx, dir, "core.excludesFile")
}

func (c driverRead) fresh() bool {
	for f, h := range c.hashes {
		if fileHash(f) != h {
			return false
		}
	}
	return true
}

// readDriverOverrides is driverOverrides, read from git, with the value of
// core.excludesFile in force and every config file read (of any scope).
func readDriverOverrides(ctx context.Context, dir string) (over [][2]string, sources []string, c configRead, err error) {
	out, err := gitCmd{dir: dir}.exec(ctx, []string{"config", "--list", "--show-scope", "--show-origin", "-z"})
	if err != nil {
		if exitCode(err) > 0 {
			// No config at all, or outside a repository: the command
			// itself reports what is wrong.
			return nil, nil, c, nil
		}
		return nil, nil, c, fmt.Errorf("read the git config of %s: %w", dir, err)
	}
	seen := map[string]bool{}
	addSource := func(p string) {
		if !slices.Contains(sources, p) {
			sources = append(sources, p)
		}
	}
	// Each entry is "<scope>\x00<origin>\x00<key>\n<value>\x00" (no
	// "\n<value>" for a bare key); a file's origin is "file:<path>", the
	// path relative to dir.
	recs := strings.Split(string(out), "\x00")
	for i := 0; i+2 < len(recs); i += 3 {
		scope, origin, kv := recs[i], recs[i+1], recs[i+2]
		if f, ok := strings.CutPrefix(origin, "file:"); ok {
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			if !slices.Contains(c.files, f) {
				c.files = append(c.files, f)
			}
		}
		if key, value, _ := strings.Cut(kv, "\n"); key == "core.excludesfile" {
			c.excludesFile = value // the last one read wins, as for git
		}
		if scope != "local" && scope != "worktree" {
			continue
		}
		file := ""
		if f, ok := strings.CutPrefix(origin, "file:"); ok {
			file = f
			if !filepath.IsAbs(file) {
				file = filepath.Join(dir, file)
			}
			addSource(file)
		}
		// Section and variable come lower-cased; the name between them
		// is kept as written, as it must be matched.
		key, value, _ := strings.Cut(kv, "\n")
		if (key == "include.path" || strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path")) && file != "" {
			addSource(includePath(file, value))
		}
		section, rest, ok := strings.Cut(key, ".")
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot < 0 {
			continue
		}
		name, variable := rest[:dot], rest[dot+1:]
		var blank []string
		switch {
		case section == "filter" && slices.Contains([]string{"clean", "smudge", "process", "required"}, variable):
			blank = []string{"clean", "smudge", "process"}
		case section == "diff" && slices.Contains([]string{"command", "textconv"}, variable):
			blank = []string{"command", "textconv"}
		case section == "merge" && variable == "driver":
			blank = []string{"driver"}
		default:
			continue
		}
		if seen[section+"."+name] {
			continue
		}
		seen[section+"."+name] = true
		for _, v := range blank {
			over = append(over, [2]string{section + "." + name + "." + v, ""})
		}
		if section == "filter" {
			over = append(over, [2]string{"filter." + name + ".required", "false"})
		}
	}
	return over, sources, c, nil
}

// configRead is what else a read of the config found.
type configRead struct {
	excludesFile string   // core.excludesFile, "" when unset
	files        []string // every config file read, whatever its scope
}

// includePath resolves an include.path value as git does: "~/" is the home
// directory, a relative path is relative to the including file's directory.
func includePath(from, value string) string {
	if rest, ok := strings.CutPrefix(value, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	if filepath.IsAbs(value) {
		return filepath.Clean(value)
	}
	return filepath.Join(filepath.Dir(from), value)
}

// git runs a plain git command in dir.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitCmd{dir: dir, args: args}.run(ctx)
}

// exitCode returns the exit code of a failed git command, or -1 when err is
// not one.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// firstLine returns out up to its first newline.
func firstLine(out []byte) string {
	s, _, _ := strings.Cut(string(out), "\n")
	return s
}

// TopLevel returns the root of the working tree that contains dir.
func TopLevel(ctx context.Context, dir string) (string, error) {
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("find the git repository of %s: %w", dir, err)
	}
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		if exitCode(err) > 0 {
			return "", fmt.Errorf("%s: %w (no working tree found): run runr inside a git checkout, or run `git init` there first", dir, ErrNotRepository)
		}
		return "", err
	}
	top := firstLine(out)
	if top == "" {
		return "", fmt.Errorf("%s: %w (it is inside a .git directory or a bare repository): run runr from the working tree", dir, ErrNotRepository)
	}
	return filepath.FromSlash(top), nil
}

// Locate returns, from one git process, what TopLevel and CommonDir return
// for dir. It fails where either would (outside a working tree, inside a
// .git directory): then ask CommonDir alone. The same process finds the
// rest of the repository's git files, which TakeSnapshot in dir or at the
// root then needs no git process for, while the files through which git
// found them stay as they are.
func Locate(ctx context.Context, dir string) (top, common string, err error) {
	paths, err := locateAll(ctx, dir)
	if err != nil {
		return "", "", err
	}
	return paths.top, paths.common, nil
}

// locateAll runs the git process of Locate and remembers what it found.
func locateAll(ctx context.Context, dir string) (repoPaths, error) {
	out, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--git-dir",
		"--git-path", "index", "--git-path", "info/exclude", "--show-object-format")
	if err != nil {
		if exitCode(err) > 0 {
			return repoPaths{}, fmt.Errorf("%s: %w (no working tree found): run runr inside a git checkout, or run `git init` there first", dir, ErrNotRepository)
		}
		return repoPaths{}, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 6 || lines[0] == "" || lines[1] == "" {
		return repoPaths{}, fmt.Errorf("%s: %w (it is inside a .git directory or a bare repository): run runr from the working tree", dir, ErrNotRepository)
	}
	paths := repoPaths{top: filepath.FromSlash(lines[0]), common: filepath.FromSlash(lines[1]), own: filepath.FromSlash(lines[2]),
		index: filepath.FromSlash(lines[3]), exclude: filepath.FromSlash(lines[4]), format: lines[5]}
	remember(paths, dir)
	return paths, nil
}

// located remembers, per directory, where its repository's git files are,
// with the content of the files through which git found them
// (repoLocationFiles, at the root): a .git file rewritten, a commondir
// created or a config that moves the work tree makes the record stale.
var located struct {
	sync.Mutex
	dirs map[string]locatedPaths
}

type locatedPaths struct {
	paths  repoPaths
	hashes map[string]string
}

func remember(paths repoPaths, dirs ...string) {
	l := locatedPaths{paths: paths, hashes: map[string]string{}}
	for _, f := range repoLocationFiles(paths.top) {
		l.hashes[f] = fileHash(f)
	}
	located.Lock()
	defer located.Unlock()
	if located.dirs == nil {
		located.dirs = map[string]locatedPaths{}
	}
	for _, d := range append(dirs, paths.top) {
		located.dirs[filepath.Clean(d)] = l
	}
}

// recall is what remember kept for dir, while it is current.
func recall(dir string) (repoPaths, bool) {
	located.Lock()
	l, ok := located.dirs[filepath.Clean(dir)]
	located.Unlock()
	if !ok {
		return repoPaths{}, false
	}
	for f, h := range l.hashes {
		if fileHash(f) != h {
			return repoPaths{}, false
		}
	}
	return l.paths, true
}

// CommonDir returns the absolute git common dir of the repository that holds
// dir: the .git directory shared by all of its worktrees.
func CommonDir(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		if exitCode(err) > 0 {
			return "", fmt.Errorf("%s: %w: run runr inside a git checkout, or run `git init` there first", dir, ErrNotRepository)
		}
		return "", err
	}
	return filepath.FromSlash(firstLine(out)), nil
}

// Head returns the commit HEAD points at, or "" in a repository with no
// commits yet.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		if exitCode(err) > 1 {
			return "", fmt.Errorf("%s: %w: %v", dir, ErrNotRepository, err)
		}
		return "", err
	}
	return firstLine(out), nil
}

// IsIgnored reports whether path (relative to dir, or absolute) is ignored by
// the repository's ignore rules.
func IsIgnored(ctx context.Context, dir, path string) (bool, error) {
	_, err := git(ctx, dir, "check-ignore", "--quiet", "--", path)
	switch exitCode(err) {
	case -1:
		if err != nil {
			return false, err
		}
		return true, nil
	case 1:
		return false, nil
	default:
		return false, fmt.Errorf("check whether %s is ignored: %w", path, err)
	}
}
