package proc

// pidAlive reports whether pid is a live (non-zombie) process.
func pidAlive(pid int) bool {
	st, err := readProcStat(pid)
	return err == nil && st.state != 'Z'
}
