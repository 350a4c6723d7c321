package report

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunSandboxRecord(t *testing.T) {
	data, err := json.Marshal(map[string]any{"mode": "on", "confined": true, "abi": 7, "namespace": true,
		"read_only": []string{"/r/.git"}, "writable": []string{"/r", "/tmp/runr-x"}})
	require.NoError(t, err)
	r := sandboxRecord(data)
	require.NotNil(t, r)
	assert.Equal(t, "on: Landlock ABI 7, private mount namespace, read-only: /r/.git", r.Summary())
	assert.Nil(t, sandboxRecord(nil))
	assert.Nil(t, sandboxRecord(json.RawMessage(`[1]`)))
}
