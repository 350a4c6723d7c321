package doctor

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/runr-dev/runr/internal/proc"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// writable is access(2)'s W_OK.
const writable = 2

// CheckRunEnv is the name of the check of runr's own environment.
const CheckRunEnv = "environment"

// gitRedirects are the variables by which git takes its repository, work
// tree or index from the environment rather than from the directory it
// runs in. Inherited by runr, they would point runr's git calls, and the
// agent's, at another repository than the checkout the run works on.
var gitRedirects = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE"}

// RunEnvProblem is environment_invalid naming what in environ (runr's own
// environment) keeps a run from working, or nil: a git variable that
// redirects git elsewhere, a TMPDIR that is not a directory runr can write
// in, no git on PATH. runr run and runr resume ask it before they create or
// touch a run, so such a run leaves no record; runr doctor reports it.
func RunEnvProblem(environ []string) error {
	get := func(key string) (string, bool) {
		for i := len(environ) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
				return v, true
			}
		}
		return "", false
	}
	for _, k := range gitRedirects {
		if v, ok := get(k); ok && v != "" {
			return stopreasons.Errorf(stopreasons.EnvironmentInvalid,
				"%s is set in runr's environment (%s=%s): git would take the repository from it rather than from the checkout the run works on; unset it (unset %s) and run runr inside the checkout",
				k, k, stopreasons.ShellQuote(v), k)
		}
	}
	if tmp, ok := get("TMPDIR"); ok && tmp != "" {
		fi, err := os.Stat(tmp)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return stopreasons.Errorf(stopreasons.EnvironmentInvalid,
				"TMPDIR names %s, which does not exist; create it or point TMPDIR at a directory that does", tmp)
		case err != nil:
			return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "TMPDIR %s cannot be used", tmp)
		case !fi.IsDir():
			return stopreasons.Errorf(stopreasons.EnvironmentInvalid,
				"TMPDIR names %s, which is not a directory; point TMPDIR at a directory", tmp)
		case syscall.Access(tmp, writable) != nil:
			return stopreasons.Errorf(stopreasons.EnvironmentInvalid,
				"TMPDIR names %s, which runr cannot write in; point TMPDIR at a directory it can", tmp)
		}
	}
	if _, err := proc.LookPath("git", "", environ); err != nil {
		return stopreasons.Errorf(stopreasons.EnvironmentInvalid,
			"git is not installed or not on PATH; runr needs git: install it (or add it to PATH) and try again")
	}
	return nil
}
