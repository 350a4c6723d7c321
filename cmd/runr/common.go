package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// repoRoot is the top level of the git repository around the working
// directory; outside one it is environment_invalid.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "cannot read the working directory")
	}
	top, err := topLevel(wd)
	if errors.Is(err, guard.ErrGitMissing) {
		return "", stopreasons.Errorf(stopreasons.EnvironmentInvalid,
			"git is not installed or not on PATH; runr needs git: install it and try again")
	}
	if err != nil {
		return "", stopreasons.Errorf(stopreasons.EnvironmentInvalid, "%s is not inside a git repository: runr works on a git checkout (run 'git init' first, or cd into one)", wd)
	}
	return top, nil
}

// located remembers, per directory, where its repository is: a command
// asks for the top level and the common dir more than once, and each ask
// would be a git process.
var located = struct {
	sync.Mutex
	dirs map[string][2]string
}{dirs: map[string][2]string{}}

func locate(dir string) (top, common string, ok bool) {
	located.Lock()
	defer located.Unlock()
	if l, ok := located.dirs[dir]; ok {
		return l[0], l[1], true
	}
	top, common, err := guard.Locate(context.Background(), dir)
	if err != nil {
		return "", "", false
	}
	located.dirs[dir] = [2]string{top, common}
	return top, common, true
}

// topLevel is guard.TopLevel, remembered.
func topLevel(dir string) (string, error) {
	if top, _, ok := locate(dir); ok {
		return top, nil
	}
	return guard.TopLevel(context.Background(), dir)
}

// openStore opens the run store: --home, else RUNR_HOME, else the git
// common dir's runr/ of the repository around the working directory.
func openStore(io *IOStreams, g *GlobalOptions, open func(string) (*state.Store, error)) (*state.Store, error) {
	home := g.Home
	if home == "" {
		home = lookupEnv(io.Environ, "RUNR_HOME")
	}
	if home == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "cannot read the working directory")
		}
		home, err = defaultHome(wd)
		if err != nil {
			return nil, err
		}
	} else if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	return open(home)
}

// defaultHome is the run store of the git repository containing dir, or
// environment_invalid outside one.
func defaultHome(dir string) (string, error) {
	_, common, ok := locate(dir)
	var err error
	if !ok {
		common, err = guard.CommonDir(context.Background(), dir)
	}
	switch {
	case errors.Is(err, guard.ErrGitMissing):
		return "", stopreasons.Errorf(stopreasons.EnvironmentInvalid,
			"git is not installed or not on PATH; runr needs git: install it and try again")
	case err != nil:
		return "", stopreasons.Errorf(stopreasons.EnvironmentInvalid,
			"%s is not inside a git repository (%v); run runr in a git checkout, or give the run store with --home", dir, err)
	}
	return state.DefaultHome(common), nil
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// loadRun resolves a run reference (an id or "latest") and loads its state.
func loadRun(store *state.Store, ref string) (*state.State, error) {
	id, err := store.Resolve(ref)
	if err != nil {
		return nil, err
	}
	return store.Load(id)
}

// checkRecordedRepo refuses a resume of run st from repo when state.json's
// repo is a checkout of another repository: a resume runs the agent and
// the verify commands in the recorded repo, so a path edited into
// state.json would run them in someone else's checkout, or in any
// directory at all (the run's git calls name the git dir its guard
// snapshot recorded, so they would still work). A recorded repo that is
// no checkout git knows (moved, removed, never one) is refused too.
func checkRecordedRepo(store *state.Store, st *state.State, repo string) error {
	if st.Repo == "" || filepath.Clean(st.Repo) == filepath.Clean(repo) {
		return nil
	}
	_, here, ok := locate(repo)
	if !ok {
		return nil
	}
	_, recorded, ok := locate(st.Repo)
	if ok && filepath.Clean(recorded) == filepath.Clean(here) {
		return nil
	}
	return stopreasons.Errorf(stopreasons.StateCorrupt,
		"%s: repo %s is not a checkout of the repository at %s (git dir %s), left untouched; resume the run from its own repository, or inspect or remove it",
		store.StatePath(st.RunID), shownPath(st.Repo), shownPath(repo), shownPath(here))
}
