//go:build !linux

package state

import "os"

// renameNoReplace renames a directory to path; rename(2) replaces only an
// empty directory, and CreateRun looked first.
func renameNoReplace(from, to string) error { return os.Rename(from, to) }
