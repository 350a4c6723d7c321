package tests

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allowedImports is the import graph of DESIGN §1: which of runr's own
// packages each internal package may import, besides the floor.
var allowedImports = map[string][]string{
	"resume":         {"supervisor", "state", "config", "parallel", "telemetry", "notify", "rulestate"},
	"parallel":       {"supervisor", "guard", "state", "task", "report", "stopconditions", "config"},
	"initcfg":        {"agents", "config", "coverage"},
	"notify":         {"config", "state"},
	"supervisor":     {"stopconditions", "agents", "guard", "sandbox", "state", "task", "report", "config", "rulestate", "coverage"},
	"sandbox":        {},
	"doctor":         {"guard", "sandbox", "state", "stopconditions", "report", "config"},
	"report":         {"state", "stopconditions", "rulestate", "config"},
	"agents":         {},
	"config":         {"stopconditions"},
	"guard":          {},
	"coverage":       {},
	"state":          {},
	"stopconditions": {},
	"rulestate":      {"state", "stopconditions"},
	"task":           {},
	"watch":          {"report", "state", "stopconditions", "rulestate"},
	"telemetry":      {"supervisor", "state"},
	"proc":           {},
	"stopreasons":    {},
	"termtext":       {},
}

// floor is what every package may import but the pure evaluator, which
// imports stopreasons alone, and the floor's own packages, which import
// nothing of runr's.
var floor = []string{"proc", "stopreasons", "termtext"}

func allowedFor(pkg string) []string {
	switch {
	case pkg == "stopconditions":
		return []string{"stopreasons"}
	case slices.Contains(floor, pkg):
		return nil
	}
	return append(slices.Clone(allowedImports[pkg]), floor...)
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
		_, known := allowedImports[pkg]
		allowed := allowedFor(pkg)
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

// TestOnlyProcStartsProcesses: every process runr starts goes through
// internal/proc (process groups, timeouts, the one PATH lookup), so no
// other package of runr imports os/exec (tests aside).
func TestOnlyProcStartsProcesses(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./internal/...", "./cmd/...")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(lines), 1)
	for _, line := range lines {
		fields := strings.Fields(line)
		if fields[0] == "github.com/runr-dev/runr/internal/proc" {
			continue
		}
		assert.NotContains(t, fields[1:], "os/exec", "%s starts processes itself; use internal/proc", fields[0])
	}
}
