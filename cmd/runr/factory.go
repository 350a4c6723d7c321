package main

import "github.com/runr-dev/runr/internal/state"

// GlobalOptions are the flags every command shares; the root command fills
// them in when it parses the command line.
type GlobalOptions struct {
	Home    string
	Config  string
	NoColor bool
}

// Factory holds what the commands share: the streams, the global options
// and the dependencies a command needs. Dependencies are functions, called
// when a command runs (after the global flags are parsed), so a command
// that needs none pays nothing and a test can replace them.
type Factory struct {
	IO     *IOStreams
	Global *GlobalOptions
	// Version is runr's version, as recorded in a run's state; Build has
	// it with the commit and build date.
	Version string
	Build   BuildInfo
	// RepoRoot is the top level of the git repository around the working
	// directory; outside one it is environment_invalid.
	RepoRoot func() (string, error)
	// Store opens the run store: --home, else RUNR_HOME, else the git
	// common dir's runr/ of the repository around the working directory.
	Store func() (*state.Store, error)
	// StoreRead opens the same store for reading only (status, doctor of
	// a run), so that a read-only store can still be inspected.
	StoreRead func() (*state.Store, error)
}

// NewFactory is the factory of the runr process with streams io.
func NewFactory(io *IOStreams) *Factory {
	b := currentBuild()
	f := &Factory{IO: io, Global: &GlobalOptions{}, Version: b.Version, Build: b, RepoRoot: repoRoot}
	f.Store = func() (*state.Store, error) { return openStore(io, f.Global, state.Open) }
	f.StoreRead = func() (*state.Store, error) { return openStore(io, f.Global, state.OpenRead) }
	return f
}
