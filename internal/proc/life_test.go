package proc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Each sign of life a sample shows moves the time it was last seen.
func TestLifeWatchLook(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	next := groupSample{cpu: 10, io: 100, pids: " 7"}
	w := &lifeWatch{last: next, seen: t0, what: SignStart, sample: func(int) (groupSample, bool) { return next, true }}
	steps := []struct {
		change func(*groupSample)
		what   string
		moved  bool
	}{
		{func(*groupSample) {}, SignStart, false},
		{func(s *groupSample) { s.cpu++ }, SignCPU, true},
		{func(s *groupSample) { s.io += 4096 }, SignIO, true},
		{func(s *groupSample) { s.pids = " 7 9" }, SignProcesses, true},
		{func(*groupSample) {}, SignProcesses, false},
	}
	for i, st := range steps {
		st.change(&next)
		now := t0.Add(time.Duration(i+1) * time.Second)
		seenBefore := w.seen
		w.look(now)
		assert.Equal(t, st.what, w.what, "step %d", i)
		if st.moved {
			assert.Equal(t, now, w.seen, "step %d", i)
		} else {
			assert.Equal(t, seenBefore, w.seen, "step %d", i)
		}
	}
	assert.Equal(t, 100*time.Millisecond, lifeInterval(200*time.Millisecond))
	assert.Equal(t, 5*time.Second, lifeInterval(5*time.Minute))
	assert.Equal(t, time.Second, lifeInterval(5*time.Second))
}
