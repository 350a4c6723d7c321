package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRootHasEveryCommand(t *testing.T) {
	root, _ := newRootCmd(testFactory())
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	assert.ElementsMatch(t, []string{"run", "resume", "status", "stop", "doctor", "logs", "reasons", "init", "prune", "completion", "version", "watch", "report", "export"}, names)
}

func TestCommandsTakeARef(t *testing.T) {
	var stop *StopOptions
	require.NoError(t, execute(t, NewCmdStop(testFactory(), func(o *StopOptions) error { stop = o; return nil }), "latest"))
	assert.Equal(t, "latest", stop.Ref)
	require.NoError(t, execute(t, NewCmdStop(testFactory(), func(o *StopOptions) error { stop = o; return nil })))
	assert.Equal(t, "", stop.Ref, "no id: the one live run")
	assert.ErrorContains(t, execute(t, NewCmdStop(testFactory(), func(*StopOptions) error { return nil }), "a", "b"), "accepts at most 1 arg")

	var status *StatusOptions
	require.NoError(t, execute(t, NewCmdStatus(testFactory(), func(o *StatusOptions) error { status = o; return nil }), "--json"))
	assert.Equal(t, "", status.Ref, "no id: every run")
	assert.True(t, status.JSON)

	var doctor *DoctorOptions
	require.NoError(t, execute(t, NewCmdDoctor(testFactory(), func(o *DoctorOptions) error { doctor = o; return nil }), "latest", "--json"))
	assert.Equal(t, "latest", doctor.Ref)
	assert.True(t, doctor.JSON)

	var reasons *ReasonsOptions
	require.NoError(t, execute(t, NewCmdReasons(testFactory(), func(o *ReasonsOptions) error { reasons = o; return nil }), "timeout", "--family", "user", "--markdown"))
	assert.Equal(t, ReasonsOptions{IO: reasons.IO, Code: "timeout", Family: "user", Format: FormatTable, Markdown: true, Container: "runr"}, *reasons)
}

// The global flags reach a command's dependencies: --home is where the
// store opens.
func TestGlobalFlagsReachTheFactory(t *testing.T) {
	home := t.TempDir()
	io, _, _ := testStreams()
	f := NewFactory(io)
	root, _ := newRootCmd(f)
	var opts *StatusOptions
	for _, c := range root.Commands() {
		if c.Name() == "status" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(NewCmdStatus(f, func(o *StatusOptions) error { opts = o; return nil }))
	root.SetArgs([]string{"--home", home, "--no-color", "status"})
	require.NoError(t, root.Execute())
	store, err := opts.Store()
	require.NoError(t, err)
	assert.Equal(t, home, store.Home)
	assert.True(t, io.NoColor)
}

func TestVersionPrintsTheFactorysBuild(t *testing.T) {
	io, out, _ := testStreams()
	f := NewFactory(io)
	f.Build = BuildInfo{Version: "v9.9.9", Commit: "abc123", Date: "2026-01-02T03:04:05Z", Go: "go1.26.8", OS: "linux", Arch: "arm64"}
	require.NoError(t, execute(t, NewCmdVersion(f, nil)))
	assert.Equal(t, "runr v9.9.9\ncommit: abc123\nbuilt:  2026-01-02T03:04:05Z\ngo:     go1.26.8 linux/arm64\n", out.String())
}
