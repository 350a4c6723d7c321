package doctor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// TestEnvironmentSandbox: the sandbox line names the kernel's Landlock
// ABI and, for the repository's sandbox.mode, what a run gets; it fails
// only when a run would stop. Without the helper (runr's executable) the
// namespace cannot be tried, as on a machine that refuses it.
func TestEnvironmentSandbox(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
	dir := goodRepo(t)
	for _, tc := range []struct {
		mode   string
		ok     bool
		detail []string
	}{
		{"off", true, []string{"Landlock ABI", "sandbox.mode off"}},
		{"on", false, []string{"a run would stop", "--worktree"}},
		{"auto", true, []string{"sandbox.mode auto: a run in the checkout may write " + filepath.Join(dir, "README.md")}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			o := envOptions(dir)
			o.Environ = append(o.Environ, "RUNR_SANDBOX_MODE="+tc.mode)
			checks := CheckEnvironment(context.Background(), o)
			c := find(t, checks, CheckSandbox)
			assert.Equal(t, tc.ok, c.OK, c.Detail)
			for _, d := range tc.detail {
				assert.Contains(t, c.Detail, d)
			}
			require.NotNil(t, c.Sandbox)
			assert.Equal(t, tc.mode, c.Sandbox.Mode)
			if !tc.ok {
				assert.Equal(t, stopreasons.EnvironmentInvalid, Verdict(checks))
			}
		})
	}
}

func TestRunSandboxRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), timelineFile)
	sandbox := `{"seq":1,"type":"sandbox","data":{"mode":"on","confined":true,"abi":7,"namespace":true,` +
		`"read_only":["/r/.git"],"writable":["/r","/tmp/runr-x"]}}` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(sandbox), 0o644))
	sum, _ := scanTimeline(path, nil)
	r := sandboxRecord(sum.sandbox)
	require.NotNil(t, r)
	assert.Equal(t, "on: Landlock ABI 7, private mount namespace, read-only: /r/.git", r.Summary())
	assert.Nil(t, sandboxRecord(nil))

	// The last sandbox event is the one that counts, and a damaged one
	// leaves none.
	require.NoError(t, os.WriteFile(path, []byte(sandbox+`{"seq":2,"type":"sandbox","data":[1]}`+"\n"), 0o644))
	sum, _ = scanTimeline(path, nil)
	assert.Nil(t, sandboxRecord(sum.sandbox))
}
