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
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/worker"
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
}

// run executes git and returns its stdout. The locale is fixed so messages
// and output are predictable, optional locks are off so that reading commands
// never rewrite the index behind the user's back, and git never prompts. Git
// runs in its own process group like every process runr starts, so a Ctrl+C
// at the terminal reaches it only through ctx.
func (c gitCmd) run(ctx context.Context) ([]byte, error) {
	env := append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	var stdout bytes.Buffer
	res, err := worker.Run(ctx, worker.Spec{
		Argv:      append([]string{"git"}, c.args...),
		Dir:       c.dir,
		Env:       append(env, c.env...),
		Stdin:     c.stdin,
		Stdout:    &stdout,
		KillGrace: gitKillGrace,
		TailBytes: gitStderrKeep,
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("git %s (in %s): %w", strings.Join(c.args, " "), c.dir, ctxErr)
		}
		if errors.Is(err, worker.ErrNotFound) {
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
