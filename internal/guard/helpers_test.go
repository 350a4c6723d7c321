package guard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain isolates git from the machine: no system or global config, no
// identity from the environment.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "guard-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
		"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// newRepo makes an empty repository; with identity it gets a user.name and
// user.email of its own.
func newRepo(t *testing.T, identity bool) string {
	t.Helper()
	dir := t.TempDir()
	// Resolve symlinks (macOS /var -> /private/var) so paths compare equal to git's.
	dir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	gitT(t, dir, "init", "--quiet", "--initial-branch=main")
	if identity {
		gitT(t, dir, "config", "user.name", "Test User")
		gitT(t, dir, "config", "user.email", "test@example.com")
	}
	return dir
}

// gitT runs git in dir and returns its trimmed stdout, failing the test on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// writeFile writes content to rel under dir, making parent directories.
func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
}

// commitFiles writes files and commits them.
func commitFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		writeFile(t, dir, rel, content)
	}
	gitT(t, dir, "add", "--all")
	gitT(t, dir, "commit", "--quiet", "-m", "setup")
}
