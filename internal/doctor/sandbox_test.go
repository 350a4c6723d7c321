package doctor

import (
	"context"
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
