package tests

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDemoFromTheReadme runs the README's main command, the bundled demo,
// as a newcomer would: it must complete with exit 0.
func TestDemoFromTheReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo builds runr and its agent again; skipped with -short")
	}
	cmd := exec.Command("bash", filepath.Join(repoRoot(), "examples", "demo", "run.sh"), "--quiet")
	cmd.Env = append(testEnv(t.TempDir()), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "complete")
	assert.Contains(t, string(out), "2 milestones approved of 2")
}
