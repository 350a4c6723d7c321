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
	// maxOut, when above 0, bounds the stdout kept; the rest is dropped
	// and the output ends short (see cappedBuffer).
	maxOut int
}

// safeConfig turns off, for every git runr runs, each way a repository (its
// .git/config, its hooks, files an agent can write) gets git to start a
// program: hooks (post-index-change runs on any index write), an fsmonitor
// program, external diff, credential helpers, remote transports, pagers and
// editors, automatic gc and maintenance (which run hooks and detach). The
// untracked cache is off so that reading commands write nothing. Filter and
// diff drivers have names, so they are turned off per name (driverOverrides).
// No command recurses into a submodule (noRecurse): a submodule's config
// and attributes are the agent's to write, and git reading them would run
// the filters they name. Signatures are never shown (log.showSignature
// would run gpg.program, which the repository's config can name), and log
// output is never re-encoded by the repository's i18n settings.
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
	"-c", "log.showSignature=false",
	"-c", "i18n.logOutputEncoding=UTF-8",
	"-c", "submodule.recurse=false",
	"-c", "diff.ignoreSubmodules=dirty",
	"-c", "status.submoduleSummary=false",
}

// safeEnv is the environment part of safeConfig: what git reads from the
// environment before its config. GIT_NO_REPLACE_OBJECTS: a replace ref
// (refs/replace/<commit>), which anyone who can write .git can add, would
// make git show runr another object in place of the one recorded, and hide
// a commit's changes from the guard.
var safeEnv = []string{"GIT_NO_REPLACE_OBJECTS=1", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_EDITOR=:", "GIT_ASKPASS=", "SSH_ASKPASS="}

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
	return c.exec(ctx, append(slices.Clone(safeConfig), noRecurse(c.args)...))
}

// recursingCommands look into a submodule's work tree (its status, its
// diff) unless told not to; the command line's --ignore-submodules wins over
// every config, a submodule's own entry in .gitmodules included. "dirty"
// still compares a submodule's recorded commit with its HEAD, which git
// reads in-process; it only stops git from starting a git in the submodule
// to look at its files (the guard reads those itself).
var recursingCommands = []string{"status", "diff", "diff-index", "diff-files"}

// noRecurse returns args with --ignore-submodules=dirty after a subcommand
// that would otherwise look into submodules.
func noRecurse(args []string) []string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		if !slices.Contains(recursingCommands, args[i]) {
			return args
		}
		return slices.Concat(args[:i+1], []string{"--ignore-submodules=dirty"}, args[i+1:])
	}
	return args
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
	var out io.Writer = &stdout
	if c.maxOut > 0 {
		out = &cappedBuffer{buf: &stdout, max: c.maxOut}
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:      append([]string{"git"}, args...),
		Dir:       c.dir,
		Env:       slices.Concat(env, c.env, pinnedEnv(c.dir)),
		Stdin:     c.stdin,
		Stdout:    out,
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
