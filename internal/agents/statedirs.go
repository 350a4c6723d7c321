package agents

import "path/filepath"

// StatePaths are where an agent CLI keeps its own state (settings,
// sessions, caches, credentials it refreshes), which a sandboxed call must
// be able to write: Dirs are created (0700) when missing so that they can
// be granted; each of Files is granted alone (its directory stays closed),
// and created (0600) with its Initial content when missing, since the
// sandboxed CLI could not create it.
type StatePaths struct {
	Dirs  []string
	Files []StateFile
}

// StateFile is a file of an agent CLI's state.
type StateFile struct {
	Path    string
	Initial string // what an absent file is created with
}

// UserDirs are the user's directories an agent CLI keeps its state in: the
// home directory and the XDG base directories, as the environment moves
// them.
type UserDirs struct {
	Home, Config, Data, State, Cache string
	getenv                           func(string) string
}

// Var is the directory the variable v names (CLAUDE_CONFIG_DIR,
// CODEX_HOME), when it names an absolute path; else def.
func (u UserDirs) Var(v, def string) string {
	if x := u.getenv(v); x != "" && filepath.IsAbs(x) {
		return x
	}
	return def
}

// StateDirs is the state of agent kind's CLI under home; getenv reads the
// variables that move it (XDG_*, and the CLI's own). A command agent has
// none: what it writes outside the work tree goes in sandbox.writable.
func StateDirs(kind, home string, getenv func(string) string) StatePaths {
	a, ok := lookup(kind)
	if home == "" || !ok {
		return StatePaths{}
	}
	u := UserDirs{Home: home, getenv: getenv}
	u.Config = u.Var("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	u.Data = u.Var("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	u.State = u.Var("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	u.Cache = u.Var("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	return a.StatePaths(u)
}
