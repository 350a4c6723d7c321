package tests

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allowedImports is the import graph of DESIGN §1: which of runr's own
// packages each internal package may import. worker and stopreasons are the
// floor, open to every package but the pure evaluator.
var allowedImports = map[string][]string{
	"resume":         {"supervisor", "state", "config", "parallel", "worker", "stopreasons"},
	"parallel":       {"supervisor", "guard", "state", "doctor", "stopconditions", "config", "worker", "stopreasons"},
	"initcfg":        {"agents", "config", "worker", "stopreasons"},
	"notify":         {"config", "state", "worker", "stopreasons"},
	"supervisor":     {"stopconditions", "agents", "guard", "sandbox", "worker", "state", "doctor", "config", "stopreasons"},
	"sandbox":        {"worker", "stopreasons"},
	"doctor":         {"guard", "sandbox", "state", "stopconditions", "config", "worker", "stopreasons"},
	"agents":         {"worker", "stopreasons"},
	"config":         {"stopconditions", "worker", "stopreasons"},
	"guard":          {"worker", "stopreasons"},
	"state":          {"worker", "stopreasons"},
	"stopconditions": {"stopreasons"},
	"watch":          {"doctor", "state", "stopconditions", "stopreasons"},
	"telemetry":      {"supervisor", "stopreasons"},
	"worker":         {},
	"stopreasons":    {},
}

func TestPackagesImportOnlyWhatTheLayoutAllows(t *testing.T) {
	const prefix = "github.com/runr-dev/runr/internal/"
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./internal/...")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	require.NoError(t, err)
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], prefix)
		allowed, known := allowedImports[pkg]
		if !assert.True(t, known, "package %s is not in the layout of DESIGN §1", pkg) {
			continue
		}
		seen++
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, prefix)
			if ours {
				assert.Contains(t, allowed, dep, "internal/%s may not import internal/%s", pkg, dep)
			}
			assert.NotEqual(t, "github.com/spf13/cobra", imp, "only cmd/runr knows cobra (internal/%s imports it)", pkg)
		}
	}
	assert.Equal(t, len(allowedImports), seen)
}

// TestOnlyWorkerStartsProcesses: every process runr starts goes through
// internal/worker (process groups, timeouts, the one PATH lookup), so no
// other package of runr imports os/exec (tests aside).
func TestOnlyWorkerStartsProcesses(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./internal/...", "./cmd/...")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(lines), 1)
	for _, line := range lines {
		fields := strings.Fields(line)
		if fields[0] == "github.com/runr-dev/runr/internal/worker" {
			continue
		}
		assert.NotContains(t, fields[1:], "os/exec", "%s starts processes itself; use internal/worker", fields[0])
	}
}
