package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWrapRefusesNamesJSONCannotCarry: a path that is not UTF-8 would
// reach the helper as another name; Wrap refuses it rather than have the
// helper grant or bind the wrong path.
func TestWrapRefusesNamesJSONCannotCarry(t *testing.T) {
	for _, p := range []Policy{{Writable: []string{"/w/a\xff"}}, {ReadOnly: []string{"/w/\xfe/.git"}}} {
		_, err := Wrap("/bin/runr", p)
		assert.ErrorContains(t, err, "not valid UTF-8")
	}
	w, err := Wrap("/bin/runr", Policy{Writable: []string{"/w/é ✓ \"q\" -- x"}})
	require.NoError(t, err)
	var back Policy
	require.NoError(t, json.Unmarshal([]byte(w[2]), &back))
	assert.Equal(t, []string{"/w/é ✓ \"q\" -- x"}, back.Writable)
	assert.Equal(t, "--", w[3])
}
