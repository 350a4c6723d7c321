package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

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
