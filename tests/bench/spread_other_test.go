//go:build !linux

package bench

import "testing"

// spreadDirs has nothing to do where ext4 is not.
func spreadDirs(t *testing.T, dir string) {}
