//go:build !linux

package sandbox

import (
	"fmt"
	"io"
)

// Main is the helper; off Linux there is nothing to apply it with.
func Main(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%sthe sandbox needs Linux (Landlock)\n", ErrorPrefix)
	return ExitSetupFailed
}
