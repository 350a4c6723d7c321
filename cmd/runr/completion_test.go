package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/agents"
)

func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "complete -o default -F __start_runr runr",
		"zsh":        "#compdef runr",
		"fish":       "complete -c runr",
		"powershell": "Register-ArgumentCompleter",
	} {
		io, out, errb := testStreams()
		require.Equal(t, 0, Main([]string{"completion", shell}, io), errb.String())
		assert.Contains(t, out.String(), marker, shell)
		assert.Contains(t, out.String(), "__complete", "%s: the script asks runr for the candidates", shell)
	}
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}, {"completion", "bash", "zsh"}} {
		io, out, _ := testStreams()
		assert.Equal(t, 64, Main(args, io), "%v", args)
		assert.Empty(t, out.String(), "%v", args)
	}
}

// complete runs the hidden __complete command as a shell's script does and
// returns the candidates without their descriptions.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	io, out, errb := testStreams()
	require.Equal(t, 0, Main(append([]string{"__complete"}, args...), io), errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.NotEmpty(t, lines)
	require.True(t, strings.HasPrefix(lines[len(lines)-1], ":"), "the last line is the directive")
	var got []string
	for _, l := range lines[:len(lines)-1] {
		value, _, _ := strings.Cut(l, "\t")
		got = append(got, value)
	}
	return got
}

func TestCompleteRunIDsNewestFirst(t *testing.T) {
	home := t.TempDir()
	ids := []string{"20261121T230017Z-3f9a1c", "20261122T080000Z-000001", "20261121T230018Z-aaaaaa"}
	for _, id := range ids {
		require.NoError(t, os.MkdirAll(filepath.Join(home, "runs", id), 0o755))
	}
	want := []string{"latest", "20261122T080000Z-000001", "20261121T230018Z-aaaaaa", "20261121T230017Z-3f9a1c"}
	for _, cmd := range []string{"resume", "status", "stop", "doctor", "export"} {
		assert.Equal(t, want, complete(t, "--home", home, cmd, ""), cmd)
	}
	assert.Equal(t, []string{"20261121T230018Z-aaaaaa", "20261121T230017Z-3f9a1c"}, complete(t, "--home", home, "resume", "20261121"))
	assert.Equal(t, []string{"latest"}, complete(t, "--home", home, "stop", "l"))
	assert.Nil(t, complete(t, "--home", home, "stop", "latest", ""), "one run only")

	// An empty or missing store completes latest only, read-only: nothing
	// is created.
	missing := filepath.Join(t.TempDir(), "none")
	assert.Equal(t, []string{"latest"}, complete(t, "--home", missing, "resume", ""))
	assert.NoDirExists(t, missing)
}

func TestCompleteReasonsAndKinds(t *testing.T) {
	got := complete(t, "reasons", "")
	assert.Contains(t, got, "timeout")
	assert.Contains(t, got, "124")
	assert.Equal(t, []string{"12", "124", "125", "126", "127", "128", "129"}, complete(t, "reasons", "12"))
	assert.Equal(t, []string{"stalled"}, complete(t, "reasons", "stal"))
	assert.Equal(t, agents.Kinds(), complete(t, "run", "--agent", ""))
	assert.Contains(t, complete(t, "reasons", "--family", ""), "resource_limit")
	assert.Equal(t, []string{"bash", "zsh", "fish", "powershell"}, complete(t, "completion", ""))
	assert.Equal(t, []string{"patch", "bundle", "diff"}, complete(t, "export", "latest", "--format", ""))
	assert.Contains(t, complete(t, "reasons", "--format", ""), "k8s-pod-failure-policy-indexed")
}
