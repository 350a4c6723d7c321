package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree makes the files (with a trailing / a directory) under a new
// directory and returns it.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if p[len(p)-1] == '/' {
			require.NoError(t, os.MkdirAll(full, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte("x"), 0o644))
	}
	return root
}

func TestDenyDirs(t *testing.T) {
	root := tree(t, "vendor/a.go", "third_party/lib/x.c", "docs/", "go.mod", ".git/config")
	got := DenyDirs(root, []string{"vendor", "third_party/lib/", "docs/**", "go.mod", "*.pb.go", "src/**/gen", "missing", "../x", ".git", "/etc"})
	assert.Equal(t, []string{filepath.Join(root, "docs"), filepath.Join(root, "third_party", "lib"), filepath.Join(root, "vendor")}, got)
	assert.Empty(t, DenyDirs(root, nil))
}

func TestResolveWritable(t *testing.T) {
	got, err := ResolveWritable([]string{"/opt/cache", "~/.npm", "~", "build/out"}, "/repo", "/home/u")
	require.NoError(t, err)
	assert.Equal(t, []string{"/opt/cache", "/home/u/.npm", "/home/u", "/repo/build/out"}, got)
	_, err = ResolveWritable([]string{"~/.npm"}, "/repo", "")
	assert.Error(t, err)
}

func TestBuildWithANamespace(t *testing.T) {
	root := tree(t, ".git/config", "vendor/v.go", "go.mod")
	p, err := Build(Decision{Confine: true, Namespace: true}, Layout{WorkTree: root, DenyDirs: []string{filepath.Join(root, "vendor")},
		TempDir: "/tmp/runr-x", Extra: []string{"/home/u/.claude", "/home/u/.claude"}})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(root, ".git"), filepath.Join(root, "vendor")}, p.ReadOnly)
	assert.Equal(t, append([]string{root, "/tmp/runr-x"}, append(Devices, "/home/u/.claude")...), p.Writable)
}

func TestBuildTopLevelOnly(t *testing.T) {
	root := tree(t, ".git/config", "go.mod", "src/a.go", "vendor/v.go", "third_party/lib/x.c", "third_party/README")
	require.NoError(t, os.Symlink("/etc", filepath.Join(root, "etc-link")))
	p, err := Build(Decision{Confine: true, TopLevel: true, Around: true},
		Layout{WorkTree: root, DenyDirs: []string{filepath.Join(root, "third_party", "lib"), filepath.Join(root, "vendor")}})
	require.NoError(t, err)
	assert.Empty(t, p.ReadOnly)
	// Not the root, not .git, not the deny dirs, not the directory on the
	// way to one, never a symbolic link; every sibling.
	assert.Equal(t, append([]string{filepath.Join(root, "go.mod"), filepath.Join(root, "src"), filepath.Join(root, "third_party", "README")}, Devices...), p.Writable)
}

func TestBuildWorktreeLandlockAlone(t *testing.T) {
	root := tree(t, "go.mod", "src/a.go")
	p, err := Build(Decision{Confine: true}, Layout{WorkTree: root})
	require.NoError(t, err)
	assert.Equal(t, append([]string{root}, Devices...), p.Writable)
	p, err = Build(Decision{}, Layout{WorkTree: root})
	require.NoError(t, err)
	assert.Empty(t, p.Writable, "unconfined: no policy")
}

// TestMakePlanRefusesWritableGitDirs: a sandbox.writable entry that holds
// the repository's git directory (the repository itself, the directory
// of all your projects), or lies inside it, would hand the agent the
// hooks and config that the sandbox keeps read-only: it is refused.
func TestMakePlanRefusesWritableGitDirs(t *testing.T) {
	if ABI() == 0 {
		t.Skipf("this kernel (%s) has no Landlock", Kernel())
	}
	base := t.TempDir()
	repo := filepath.Join(base, "src", "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git", "hooks"), 0o755))
	wt := filepath.Join(base, "wt")
	require.NoError(t, os.MkdirAll(wt, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+repo+"/.git/worktrees/wt\n"), 0o644))
	for _, tc := range []struct {
		name     string
		workTree string
		worktree bool
	}{{"checkout", repo, false}, {"worktree", wt, true}} {
		for _, w := range []string{filepath.Join(base, "src"), repo, ".git/hooks", "~/src"} {
			_, _, err := MakePlan(context.Background(), Input{Mode: ModeOn, WorkTree: tc.workTree, Worktree: tc.worktree, Repo: repo, Home: base, Helper: mustExe(t), Writable: []string{w}})
			require.ErrorIs(t, err, ErrWritable, "%s: %s", tc.name, w)
			assert.ErrorContains(t, err, "git directory", "%s: %s", tc.name, w)
		}
		// An agent CLI's state dir from its own variable (CLAUDE_CONFIG_DIR=~).
		for _, st := range []string{base, filepath.Join(repo, ".git", "claude")} {
			_, _, err := MakePlan(context.Background(), Input{Mode: ModeOn, WorkTree: tc.workTree, Worktree: tc.worktree, Repo: repo, Home: base, Helper: mustExe(t), State: []string{st}})
			require.ErrorIs(t, err, ErrStatePath, "%s: %s", tc.name, st)
			assert.ErrorContains(t, err, "git directory", "%s: %s", tc.name, st)
		}
		plan, _, err := MakePlan(context.Background(), Input{Mode: ModeOn, WorkTree: tc.workTree, Worktree: tc.worktree, Repo: repo, Home: base, Helper: mustExe(t),
			Writable: []string{"~/.cache", filepath.Join(base, "src", "other")}, State: []string{filepath.Join(base, ".claude")}})
		assert.NoError(t, err, tc.name)
		assert.True(t, plan.Confine, tc.name)
	}
}
