package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Exporter reads a run's commits and trees out of a repository for `runr
// export`, through a git dir of its own: a temporary bare repository whose
// only link to the real one is an alternates entry naming its object store.
// The real repository's config, hooks and refs (all of which an agent can
// write) are never read, nor the user's global or system config, so what
// the export holds is decided by the objects alone: no format.headers, no
// diff.noprefix, no signature or filter the agent planted.
type Exporter struct {
	dir string
	env []string
}

// NewExporter makes the Exporter of the repository that holds dir. Close
// removes its temporary git dir.
func NewExporter(ctx context.Context, dir string) (*Exporter, error) {
	common, err := CommonDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := git(ctx, dir, "rev-parse", "--show-object-format")
	if err != nil {
		return nil, fmt.Errorf("read the object format of %s: %w", dir, err)
	}
	format := firstLine(out)
	tmp, err := os.MkdirTemp("", "runr-export-")
	if err != nil {
		return nil, fmt.Errorf("make a temporary git dir: %w", err)
	}
	e := &Exporter{dir: tmp, env: []string{
		"GIT_DIR=" + tmp, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_CONFIG_COUNT=0", "GIT_NO_REPLACE_OBJECTS=1",
	}}
	config := "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = " + format + "\n"
	files := []struct{ name, text string }{
		{"HEAD", "ref: refs/heads/main\n"},
		{"config", config},
		{"objects/info/alternates", filepath.Join(common, "objects") + "\n"},
		{"refs/heads", ""},
		{"refs/tags", ""},
	}
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.name))
		err := os.MkdirAll(filepath.Dir(p), 0o700)
		if err == nil && f.text == "" {
			err = os.Mkdir(p, 0o700)
		} else if err == nil {
			err = os.WriteFile(p, []byte(f.text), 0o600)
		}
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("make a temporary git dir: %w", err)
		}
	}
	return e, nil
}

// Close removes the Exporter's temporary git dir.
func (e *Exporter) Close() error { return os.RemoveAll(e.dir) }

func (e *Exporter) git(ctx context.Context, args ...string) ([]byte, error) {
	return gitCmd{dir: e.dir, env: e.env, args: args}.run(ctx)
}

// Commits lists the commits on tip that base does not have, oldest first;
// merges are left out, as a patch series cannot carry them.
func (e *Exporter) Commits(ctx context.Context, base, tip string) ([]string, error) {
	out, err := e.git(ctx, "rev-list", "--reverse", "--no-merges", base+".."+tip)
	if err != nil {
		return nil, fmt.Errorf("list the commits %s..%s: %w", short(base), short(tip), err)
	}
	return strings.Fields(string(out)), nil
}

// Patch is the commits base..tip as a series `git am` applies: one mail per
// commit, with binary changes and full index lines.
func (e *Exporter) Patch(ctx context.Context, base, tip string) ([]byte, error) {
	out, err := e.git(ctx, "format-patch", "--stdout", "--binary", "--full-index", "--no-color",
		"--no-ext-diff", "--no-textconv", "--no-signature", "--no-notes", "--src-prefix=a/", "--dst-prefix=b/",
		base+".."+tip)
	if err != nil {
		return nil, fmt.Errorf("format the commits %s..%s as patches: %w", short(base), short(tip), err)
	}
	return out, nil
}

// Bundle writes to file a bundle of branch, pointing at tip, holding the
// commits base does not have: `git fetch FILE BRANCH` on a clone that has
// base gets the run's branch.
func (e *Exporter) Bundle(ctx context.Context, base, tip, branch, file string) error {
	ref := "refs/heads/" + branch
	if _, err := e.git(ctx, "update-ref", "--no-deref", ref, tip); err != nil {
		return fmt.Errorf("name %s for the bundle: %w", branch, err)
	}
	if _, err := e.git(ctx, "bundle", "create", "-q", file, ref, "^"+base); err != nil {
		return fmt.Errorf("bundle %s: %w", branch, err)
	}
	return nil
}

// Diff is the change from the commit from to the tree tree (a TreeHash of a
// work tree), limited to paths, as a patch `git apply` applies.
func (e *Exporter) Diff(ctx context.Context, from, tree string, paths []string) ([]byte, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	args := []string{"diff-tree", "-p", "-r", "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv",
		"--src-prefix=a/", "--dst-prefix=b/", "--no-renames", from, tree, "--"}
	for _, p := range paths {
		args = append(args, ":(literal)"+p)
	}
	out, err := e.git(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("diff %s against the work tree: %w", short(from), err)
	}
	return out, nil
}

// SnapshotFile is the run dir's file that keeps the guard snapshot taken
// when the run started.
const SnapshotFile = "guard-snapshot.gob"

// Tip is the commit among commits that all the others are ancestors of
// (itself included): the last of a run's checkpoint commits. Commits not
// on one line are an error.
func (e *Exporter) Tip(ctx context.Context, commits []string) (string, error) {
	tip := ""
	seen := map[string]bool{}
	for _, c := range commits {
		if seen[c] {
			continue
		}
		seen[c] = true
		if _, err := e.git(ctx, "cat-file", "-e", c+"^{commit}"); err != nil {
			return "", fmt.Errorf("commit %s is not in the repository: %w", short(c), err)
		}
		switch {
		case tip == "" || tip == c:
			tip = c
		case e.isAncestor(ctx, tip, c):
			tip = c
		case !e.isAncestor(ctx, c, tip):
			return "", fmt.Errorf("commits %s and %s are not on one line of history", short(tip), short(c))
		}
	}
	return tip, nil
}

func (e *Exporter) isAncestor(ctx context.Context, a, b string) bool {
	_, err := e.git(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}
