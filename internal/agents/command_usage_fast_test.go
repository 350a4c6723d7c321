package agents

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseUsageLineBlanks: the quick refusal of lines that are no usage
// line gives what trimming them would: blanks of every kind before the
// prefix still count, and nothing else does.
func TestParseUsageLineBlanks(t *testing.T) {
	for _, lead := range []string{"", " ", "\t", "\r", "\v\f ", "\u00a0", "\u0085 "} {
		u, ok := ParseUsageLine([]byte(lead + "RUNR_USAGE: input_tokens=3 output_tokens=4"))
		assert.True(t, ok, "%q", lead)
		assert.Equal(t, int64(3), u.InputTokens, "%q", lead)
	}
	for _, line := range []string{"", "   ", "x RUNR_USAGE: input_tokens=3", "RUNR_STATUS: done", "\u00e9RUNR_USAGE: input_tokens=3", "R"} {
		_, ok := ParseUsageLine([]byte(line))
		assert.False(t, ok, "%q", line)
	}
}
