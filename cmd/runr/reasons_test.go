package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func testStreams() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errb := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: &bytes.Buffer{}, Out: out, Err: errb}, out, errb
}

func TestDocsMatchRegistry(t *testing.T) {
	b, err := os.ReadFile("../../docs/stop-reasons.md")
	require.NoError(t, err)
	assert.Equal(t, ReasonsMarkdown(), string(b), "docs/stop-reasons.md is out of date: run 'make docs'")
}

func TestReasonsJSONHasEveryRow(t *testing.T) {
	io, out, _ := testStreams()
	require.Equal(t, 0, Main([]string{"reasons", "--json"}, io))
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows))
	assert.Len(t, rows, len(stopreasons.All()))
	assert.Equal(t, "complete", rows[0]["code"])
}

func TestReasonsExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		exit int
		out  string
		err  string
	}{
		{[]string{"reasons", "timeout"}, 0, "exit code      124", ""},
		{[]string{"reasons", "nope"}, 64, "", `no stop reason "nope"`},
		{[]string{"reasons", "timout"}, 64, "", "did you mean timeout"},
		{[]string{"reasons", "--family", "stuck"}, 0, "same_error_repeated", ""},
		{[]string{"reasons", "--family", "weird"}, 64, "", "no such family"},
		{[]string{"reasons", "a", "b"}, 64, "", "accepts at most 1 arg"},
		{[]string{"--bogus"}, 64, "", "unknown flag: --bogus"},
		{[]string{"frobnicate"}, 64, "", "unknown command"},
		{[]string{"version"}, 0, "runr ", ""},
		{[]string{"--version"}, 0, "runr ", ""},
		{[]string{"reasons", "124"}, 0, "timeout  Time budget spent", ""},
		{[]string{"reasons", "0"}, 0, "complete  Run completed", ""},
		{[]string{"reasons", "7"}, 64, "", "no stop reason exits with 7"},
		{[]string{"reasons", "137"}, 64, "", "killed by signal 9 (SIGKILL)"},
	}
	for _, tt := range tests {
		io, out, errb := testStreams()
		assert.Equal(t, tt.exit, Main(tt.args, io), "%v: stderr %s", tt.args, errb)
		assert.Contains(t, out.String(), tt.out, "%v", tt.args)
		assert.Contains(t, errb.String(), tt.err, "%v", tt.args)
	}
}

func TestReasonsFamilyFilter(t *testing.T) {
	io, out, _ := testStreams()
	require.Equal(t, 0, Main([]string{"reasons", "--family", "user", "--json"}, io))
	var rows []stopreasons.Reason
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows))
	require.Len(t, rows, 2)
	assert.Equal(t, stopreasons.UserStopped, rows[0].Code)
	assert.Equal(t, stopreasons.Terminated, rows[1].Code)
}

func TestColourOnlyOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tty     bool
		noColor bool
		args    []string
		colour  bool
	}{
		{"pipe", false, false, []string{"reasons"}, false},
		{"terminal", true, false, []string{"reasons"}, true},
		{"NO_COLOR", true, true, []string{"reasons"}, false},
		{"--no-color", true, false, []string{"reasons", "--no-color"}, false},
	} {
		io, out, _ := testStreams()
		io.OutTTY = tc.tty
		io.NoColor = tc.noColor
		require.Equal(t, 0, Main(tc.args, io))
		assert.Equal(t, tc.colour, bytes.Contains(out.Bytes(), []byte("\x1b[")), tc.name)
	}
}

func TestNoColorEnvironmentTurnsColourOff(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	s := DefaultStreams()
	s.OutTTY, s.ErrTTY = true, true
	assert.False(t, s.ColorOut(), "NO_COLOR set: no colour on stdout even on a terminal")
	assert.False(t, s.ColorErr(), "NO_COLOR set: no colour on stderr even on a terminal")
}

// Every exit code of the registry finds its reason, as JSON too.
func TestReasonsByExitCode(t *testing.T) {
	for _, r := range stopreasons.All() {
		io, out, errb := testStreams()
		require.Equal(t, 0, Main([]string{"reasons", strconv.Itoa(r.ExitCode), "--json"}, io), errb.String())
		var rows []stopreasons.Reason
		require.NoError(t, json.Unmarshal(out.Bytes(), &rows))
		require.Len(t, rows, 1)
		assert.Equal(t, r.Code, rows[0].Code)
	}
}
