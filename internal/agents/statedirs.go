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

// StateDirs is the state of agent kind's CLI under home; getenv reads the
// variables that move it (CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_*). A command
// agent has none: what it writes outside the work tree goes in
// sandbox.writable.
func StateDirs(kind, home string, getenv func(string) string) StatePaths {
	if home == "" {
		return StatePaths{}
	}
	or := func(v, def string) string {
		if x := getenv(v); x != "" && filepath.IsAbs(x) {
			return x
		}
		return def
	}
	config := or("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	data := or("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
	state := or("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	cache := or("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	switch kind {
	case "claude":
		// Claude Code keeps its settings, sessions and backups in
		// ~/.claude and its account and project state in ~/.claude.json,
		// which it rewrites in place (an empty object is what it starts
		// from).
		dir := or("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude"))
		return StatePaths{Dirs: []string{dir}, Files: []StateFile{{Path: filepath.Join(home, ".claude.json"), Initial: "{}\n"}}}
	case "codex":
		return StatePaths{Dirs: []string{or("CODEX_HOME", filepath.Join(home, ".codex"))}}
	case "gemini":
		return StatePaths{Dirs: []string{filepath.Join(home, ".gemini")}}
	case "opencode":
		return StatePaths{Dirs: []string{filepath.Join(config, "opencode"), filepath.Join(data, "opencode"),
			filepath.Join(state, "opencode"), filepath.Join(cache, "opencode")}}
	case "qwen":
		return StatePaths{Dirs: []string{filepath.Join(home, ".qwen")}}
	case "aider":
		// Aider writes its history and cache files in the work tree; its
		// analytics and version checks under ~/.aider.
		return StatePaths{Dirs: []string{filepath.Join(home, ".aider")}}
	}
	return StatePaths{}
}
