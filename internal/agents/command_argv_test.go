package agents

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestCommandRefusesAPromptTooLongForItsArgv(t *testing.T) {
	long := strings.Repeat("x", maxArgPrompt+1)
	_, err := commandAdapter{}.Invocation(Request{Command: []string{"agent", "--message={prompt}"}, Prompt: long})
	require.Error(t, err)
	assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), "{prompt_file}")

	for _, argv := range [][]string{{"agent", "{prompt_file}"}, {"agent"}} {
		_, err := commandAdapter{}.Invocation(Request{Command: argv, Prompt: long, PromptFile: "/tmp/p.md"})
		assert.NoError(t, err, "argv %v does not carry the prompt", argv)
		assert.NoError(t, CheckArgvPrompt(argv, long))
	}
	assert.NoError(t, CheckArgvPrompt([]string{"agent", "{prompt}"}, strings.Repeat("x", maxArgPrompt)))
}
