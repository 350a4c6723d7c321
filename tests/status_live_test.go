package tests

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusOfALiveRunCountsItsTime: state.json records the elapsed time
// at its saves, and a run in its first tick has saved only at its start;
// status still counts the time since, and judges the stop rules now.
func TestStatusOfALiveRunCountsItsTime(t *testing.T) {
	repo := newRepo(t)
	p := startRunr(t, repo, nil, "run", "--prompt", "work", "--", "fakeagent", "--do", "ready; sleep 300s")
	p.waitReady(t, 1)
	time.Sleep(2500 * time.Millisecond)

	var list []struct {
		Status    string `json:"status"`
		ElapsedMS int64  `json:"elapsed_ms"`
	}
	require.NoError(t, json.Unmarshal(runrStatus(t, repo, "--json"), &list))
	require.Len(t, list, 1)
	assert.Equal(t, "running", list[0].Status)
	assert.GreaterOrEqual(t, list[0].ElapsedMS, int64(2000), "the list counts the time since the last save")

	var one struct {
		ElapsedMS int64 `json:"elapsed_ms"`
	}
	require.NoError(t, json.Unmarshal(runrStatus(t, repo, "latest", "--json"), &one))
	assert.GreaterOrEqual(t, one.ElapsedMS, int64(2000), "the run's view counts it too")

	out := string(runrStatus(t, repo, "latest"))
	assert.Regexp(t, `elapsed [2-9]s of 30m`, out)
	assert.Contains(t, out, "Stop rules (how close each is to firing):")
	assert.Regexp(t, `budget\.time +0%  [2-9]s elapsed`, out, "the rules are judged with the time of now")
}

func runrStatus(t *testing.T, repo string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), append([]string{"status"}, args...)...)
	cmd.Dir = repo
	cmd.Env = testEnv(repo)
	out, err := cmd.Output()
	require.NoError(t, err)
	return out
}
