// Command runr supervises unattended AI coding-agent runs.
package main

import (
	"os"

	"github.com/runr-dev/runr/internal/sandbox"
)

func main() {
	// runr re-executed as the sandbox helper between the fork and an
	// agent's exec: it confines itself, then becomes the agent; it returns
	// only when that failed.
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(Main(os.Args[1:], DefaultStreams()))
}
