package termtext

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want, line string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", `two\nlines` + "\tand a tab"},
		{"\x1b]0;pwned\x07\x1b[2J", `\x1b]0;pwned\x07\x1b[2J`, `\x1b]0;pwned\x07\x1b[2J`},
		{"crlf\r\nline", "crlf\nline", `crlf\r\nline`},
		{"over\rwrite", `over\rwrite`, `over\rwrite`},
		{"nul\x00del\x7f", `nul\x00del\x7f`, `nul\x00del\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`, `c1 \u009b31m`},
		{"raw \x9b31m", `raw \x9b31m`, `raw \x9b31m`},
		{"bidi \u202eevil", `bidi \u202eevil`, `bidi \u202eevil`},
	} {
		assert.Equal(t, tc.want, Visible(tc.in), "Visible(%q)", tc.in)
		assert.Equal(t, tc.line, VisibleLine(tc.in), "VisibleLine(%q)", tc.in)
		assert.NotContains(t, Visible(tc.in), "\x1b")
	}
}

func TestVisibleJSON(t *testing.T) {
	in := "tail \x1b[2J \x7f \u009b1m \u202e ✓\n"
	b, err := json.Marshal(map[string]string{"tail": in})
	require.NoError(t, err)
	out := VisibleJSON(b)
	assert.Equal(t, `{"tail":"tail \u001b[2J \u007f \u009b1m \u202e ✓\n"}`, string(out))
	var back map[string]string
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, in, back["tail"], "the JSON decodes to the same text")
}
