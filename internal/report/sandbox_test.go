package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
