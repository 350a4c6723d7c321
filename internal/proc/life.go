package proc

import "time"

// Signs of life of a process group besides its output, which the idle
// timeout judges (DESIGN §6: agent.idle_timeout): the CPU time of its
// processes, the bytes they read or wrote, and which processes it holds.
// A ten-minute build that prints nothing is busy, not stalled; a process
// asleep or blocked on a pipe shows none of them. Where the system does
// not tell (no /proc), output is the only sign.

// Signs of life, as Result.LastSign names them.
const (
	SignOutput    = "output"
	SignCPU       = "CPU time"
	SignIO        = "bytes read or written"
	SignProcesses = "a change in its processes"
	SignStart     = "the start"
)

// groupSample is what the system says of a process group at one moment.
type groupSample struct {
	cpu  uint64 // clock ticks of user and system time of its live processes
	io   uint64 // bytes its live processes read and wrote (rchar + wchar)
	pids string // its processes, in order
}

// lifeWatch keeps the last sample of a group and when it last changed.
type lifeWatch struct {
	pgid   int
	last   groupSample
	seen   time.Time // when a sign of life was last seen
	what   string    // which sign
	sample func(pgid int) (groupSample, bool)
}

// newLifeWatch starts watching pgid; nil where the system cannot be asked.
func newLifeWatch(pgid int) *lifeWatch {
	s, ok := sampleGroup(pgid)
	if !ok {
		return nil
	}
	return &lifeWatch{pgid: pgid, last: s, seen: time.Now(), what: SignStart, sample: sampleGroup}
}

// look samples the group and records a sign of life when it changed.
func (w *lifeWatch) look(now time.Time) {
	s, ok := w.sample(w.pgid)
	if !ok {
		return
	}
	switch {
	case s.cpu != w.last.cpu:
		w.seen, w.what = now, SignCPU
	case s.io != w.last.io:
		w.seen, w.what = now, SignIO
	case s.pids != w.last.pids:
		w.seen, w.what = now, SignProcesses
	}
	w.last = s
}

// lifeInterval is how often the group is sampled for an idle timeout d:
// often enough to judge it to a fifth, never more than ten times a second
// nor less than every five seconds.
func lifeInterval(d time.Duration) time.Duration {
	return min(max(d/5, 100*time.Millisecond), 5*time.Second)
}
