// Command runr supervises unattended AI coding-agent runs.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], DefaultStreams()))
}
