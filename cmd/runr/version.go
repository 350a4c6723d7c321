package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time by `make build` and the release builds:
//
//	-ldflags "-X main.version=... -X main.commit=... -X main.date=..."
//
// A build without them (go install, go build) takes what the Go toolchain
// recorded in the binary instead; see resolveBuild.
var (
	version = ""
	commit  = ""
	date    = ""
)

// unknown stands for a commit or date the build recorded nowhere.
const unknown = "unknown"

// BuildInfo says which runr this is; `runr version --json` prints it.
type BuildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// currentBuild is the BuildInfo of this binary.
func currentBuild() BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	b := resolveBuild(version, commit, date, bi)
	b.Go, b.OS, b.Arch = runtime.Version(), runtime.GOOS, runtime.GOARCH
	return b
}

// resolveBuild takes each of version, commit and date from the linker
// flags when set, else from the build info bi (nil when the binary has
// none): the module version unless it is "(devel)", vcs.revision with
// "-dirty" when vcs.modified is true, and vcs.time (the commit's time, as
// a `go build` in a checkout records no build time). What neither has is
// "dev" for the version and "unknown" for the others.
func resolveBuild(ldVersion, ldCommit, ldDate string, bi *debug.BuildInfo) BuildInfo {
	b := BuildInfo{Version: ldVersion, Commit: ldCommit, Date: ldDate}
	if bi != nil {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		var rev, when string
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if b.Commit == "" && rev != "" {
			b.Commit = rev
			if modified {
				b.Commit += "-dirty"
			}
		}
		if b.Date == "" {
			b.Date = when
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = unknown
	}
	if b.Date == "" {
		b.Date = unknown
	}
	return b
}

// String is the text of `runr version` and `runr --version`: the first
// line is "runr VERSION", as scripts read it.
func (b BuildInfo) String() string {
	return fmt.Sprintf("runr %s\ncommit: %s\nbuilt:  %s\ngo:     %s %s/%s\n",
		b.Version, b.Commit, b.Date, b.Go, b.OS, b.Arch)
}

// VersionOptions are the parsed arguments of `runr version`.
type VersionOptions struct {
	IO    *IOStreams
	Build BuildInfo
	JSON  bool
}

// NewCmdVersion builds `runr version`; runF, when a test passes one, gets the
// parsed options instead of versionRun.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO, Build: f.Build}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print runr's version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object (version, commit, date, go, os, arch)")
	return cmd
}

func versionRun(opts *VersionOptions) error {
	if opts.JSON {
		return writeJSON(opts.IO.Out, opts.Build)
	}
	_, err := fmt.Fprint(opts.IO.Out, opts.Build.String())
	return err
}
