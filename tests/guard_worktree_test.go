package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkoutSnapshot is everything of a user's checkout that --worktree must
// leave alone: every file's content and mode outside .git, the index, HEAD
// and the status.
type checkoutSnapshot struct {
	Files  map[string]string
	Index  string
	Head   string
	Branch string
	Status string
}

func snapshotCheckout(t *testing.T, repo string, env []string) checkoutSnapshot {
	t.Helper()
	s := checkoutSnapshot{Files: map[string]string{}}
	err := filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, path)
		if rel == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		s.Files[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		return nil
	})
	require.NoError(t, err)
	idx, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	require.NoError(t, err)
	sum := sha256.Sum256(idx)
	s.Index = hex.EncodeToString(sum[:])
	s.Head = gitOut(t, repo, env, "rev-parse", "HEAD")
	s.Branch = gitOut(t, repo, env, "symbolic-ref", "HEAD")
	s.Status = gitOut(t, repo, env, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	return s
}

func gitOut(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.Output()
	require.NoError(t, err, "git %v", args)
	return strings.TrimSpace(string(out))
}

// noIdentityEnv is testEnv without any git identity: no user.name or
// user.email in any config, none in the environment.
func noIdentityEnv(work string) []string {
	var env []string
	for _, kv := range testEnv(work) {
		if !strings.HasPrefix(kv, "GIT_AUTHOR_") && !strings.HasPrefix(kv, "GIT_COMMITTER_") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CONFIG_HOME="+filepath.Join(work, ".home", ".config"))
}

func TestWorktreeLeavesTheCheckoutAlone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		identity   bool
		wantAuthor string
	}{
		{"with identity", true, "Test <test@example.com>"},
		{"without identity", false, "runr <runr@localhost>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := t.TempDir()
			env := testEnv(repo)
			if !tc.identity {
				env = noIdentityEnv(repo)
			}
			files := map[string]string{"a.txt": "a\n", "src/main.go": "package main\n", "TASK.md": "- [ ] one\n- [ ] two\n"}
			for name, content := range files {
				require.NoError(t, os.MkdirAll(filepath.Join(repo, filepath.Dir(name)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644))
			}
			gitOut(t, repo, env, "init", "-q", "-b", "main")
			gitOut(t, repo, env, "add", "-A")
			gitOut(t, repo, env, "-c", "user.name=Setup", "-c", "user.email=setup@example.com", "commit", "-q", "-m", "initial")
			// The user's own work in progress: a staged edit, an unstaged
			// one and an untracked file.
			require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a, staged by the user\n"), 0o644))
			gitOut(t, repo, env, "add", "a.txt")
			require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a, edited further\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(repo, "scratch.txt"), []byte("mine\n"), 0o644))
			if !tc.identity {
				cfg := exec.Command("git", "config", "user.email")
				cfg.Dir, cfg.Env = repo, env
				_, err := cfg.Output()
				require.Error(t, err, "the repository has no identity")
			}

			before := snapshotCheckout(t, repo, env)
			code, out := runrSync(t, repo, env, "run", "--worktree", "--task", "TASK.md", "--",
				"fakeagent", "--do", "m1: write src/one.go package main", "--do", "m2: write src/two.go package main; write a.txt by the agent", "--do", "status done")
			require.Equal(t, 0, code, out)
			after := snapshotCheckout(t, repo, env)
			assert.Equal(t, before, after, "the user's checkout is byte for byte what it was")

			st := readState(t, repo)
			id := st["run_id"].(string)
			branch, _ := st["branch"].(string)
			wt, _ := st["worktree"].(string)
			assert.Equal(t, "runr/"+id, branch)
			assert.Equal(t, filepath.Join(repo, ".git", "runr", "worktrees", id), wt)
			// Beneath the working directory (the repository): named relative to it.
			shown := filepath.Join(".git", "runr", "worktrees", id)
			assert.Contains(t, out, "worktree "+shown+" (branch "+branch+")", "the summary names the worktree")

			log := gitOut(t, repo, env, "log", "--format=%an <%ae>|%s", "main.."+branch)
			lines := strings.Split(log, "\n")
			require.Len(t, lines, 2, "one commit per approved milestone: %s", log)
			assert.Equal(t, tc.wantAuthor+"|runr "+id+": milestone 2/2: two", lines[0])
			assert.Equal(t, tc.wantAuthor+"|runr "+id+": milestone 1/2: one", lines[1])
			assert.Equal(t, "src/one.go", gitOut(t, repo, env, "show", "--name-only", "--format=", branch+"~1"))
			assert.Equal(t, "a.txt\nsrc/two.go", gitOut(t, repo, env, "show", "--name-only", "--format=", branch))
			assert.Equal(t, before.Head, gitOut(t, repo, env, "rev-parse", branch+"~2"), "the branch starts at the user's HEAD")
			assert.Empty(t, gitOut(t, wt, env, "status", "--porcelain"), "everything the agent did is committed")

			status := exec.Command(filepath.Join(binDir, "runr"), "status", id)
			status.Dir, status.Env = repo, env
			sout, err := status.CombinedOutput()
			require.NoError(t, err, "%s", sout)
			assert.Contains(t, string(sout), "worktree "+shown+"\n")
			assert.Contains(t, string(sout), branch)
		})
	}
}
