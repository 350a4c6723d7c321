//go:build !linux

package state

// writeState replaces the state.json at path with data: WriteAtomic. Where
// names cannot be swapped nor leases taken, no spare is kept.
func writeState(path string, data []byte) error { return WriteAtomic(path, data) }

// dropSpare removes the spare of the state.json at path; there is none.
func dropSpare(path string) {}
