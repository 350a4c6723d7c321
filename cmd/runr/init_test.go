package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewCmdInitParsesFlags(t *testing.T) {
	var got *InitOptions
	require.NoError(t, execute(t, NewCmdInit(testFactory(), func(o *InitOptions) error { got = o; return nil }), "--force"))
	assert.True(t, got.Force)

	io, _, errb := testStreams()
	assert.Equal(t, 64, Main([]string{"init", "stray"}, io))
	assert.Contains(t, errb.String(), `unknown command "stray"`)
}
