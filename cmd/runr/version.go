package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// VersionOptions are the parsed arguments of `runr version`.
type VersionOptions struct {
	IO      *IOStreams
	Version string
}

// NewCmdVersion builds `runr version`; runF, when a test passes one, gets the
// parsed options instead of versionRun.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO, Version: f.Version}
	return &cobra.Command{
		Use:   "version",
		Short: "Print runr's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
}

func versionRun(opts *VersionOptions) error {
	_, err := fmt.Fprintf(opts.IO.Out, "runr %s\n", opts.Version)
	return err
}
