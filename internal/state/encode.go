package state

import (
	"bytes"
	"encoding/json"
	"sync"
)

// stateHead is State without its milestones: the encoder writes them
// after it, each from its cache when it did not change. The nil pointer
// hides State.Milestones (it is shallower and omitted when nil).
type stateHead struct {
	*State
	Milestones *struct{} `json:"milestones,omitempty"`
}

// milestoneCache holds the encoding of one milestone that will not change
// again (settled, and before the current one) or that nothing has touched
// yet (pristine), with what tells it apart should it change all the same.
type milestoneCache struct {
	key  milestoneKey
	data []byte
}

type milestoneKey struct {
	goal, status, treeHash, commit string
	attempts, lastTick, earlier    int
	goalCut, nilAttempts           bool
}

func keyOf(m *Milestone) milestoneKey {
	k := milestoneKey{goal: m.Goal, status: m.Status, treeHash: m.TreeHash, commit: m.Commit, attempts: len(m.Attempts),
		goalCut: m.GoalCut, nilAttempts: m.Attempts == nil}
	if n := len(m.Attempts); n > 0 {
		k.lastTick = m.Attempts[n-1].Tick
	}
	if m.Earlier != nil {
		k.earlier = m.Earlier.Count
	}
	return k
}

// pristine reports whether nothing but the task has made m: its encoding
// then follows from its key alone.
func (m *Milestone) pristine() bool {
	return len(m.Attempts) == 0 && m.Earlier == nil && m.Retries == 0 && len(m.Edges) == 0 &&
		m.ReviewRounds == 0 && m.TreeHash == "" && m.Commit == ""
}

// encodeCache keeps, per run, the encodings of its milestones that will not
// change again, and of those still as the task made them, and the buffer
// of its last state.json once written (release), for the next save to
// encode into: a save of a long run would otherwise make a buffer of the
// whole file every time, for the collector to take back.
type encodeCache struct {
	mu   sync.Mutex
	runs map[string][]milestoneCache
	bufs map[string][]byte
}

// release hands data, the result of encode for run id, back to c once it
// is written and nothing holds it.
func (c *encodeCache) release(id string, data []byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bufs == nil {
		c.bufs = map[string][]byte{}
	}
	c.bufs[id] = data[:0]
}

// forget drops what c keeps of run id.
func (c *encodeCache) forget(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, id)
	delete(c.bufs, id)
}

// encode writes st as state.json: indented, the milestones last, each on
// a line of its own but the current one. The
// milestones before the current one that are settled are encoded once and
// kept in c, and so are the ones no attempt has touched yet, so a save
// costs the same at the thousandth milestone as at the first, and the same
// for a task of ten items as for one of thousands: what does not change is
// copied, not encoded again.
func (c *encodeCache) encode(st *State) ([]byte, error) {
	var encoded []milestoneCache
	var buf []byte
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.runs == nil {
			c.runs = map[string][]milestoneCache{}
		}
		encoded = c.runs[st.RunID]
		defer func() { c.runs[st.RunID] = encoded }()
		// Taken, not shared: a save that runs meanwhile (the spend watch's
		// timer) encodes into a buffer of its own.
		buf = c.bufs[st.RunID]
		delete(c.bufs, st.RunID)
	}
	head, err := json.MarshalIndent(stateHead{State: st}, "", "  ")
	if err != nil {
		return nil, err
	}
	head = bytes.TrimSuffix(bytes.TrimRight(head, "\n"), []byte("}"))
	head = bytes.TrimRight(head, " \n")
	b := bytes.NewBuffer(buf)
	b.Grow(len(head) + 64 + milestoneBytes(encoded, len(st.Milestones)))
	b.Write(head)
	b.WriteString(",\n  \"milestones\": [")
	if len(encoded) > len(st.Milestones) {
		encoded = encoded[:len(st.Milestones)]
	}
	for i := range st.Milestones {
		m := &st.Milestones[i]
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		frozen := i != st.MilestoneIndex && ((i < st.MilestoneIndex && m.settled()) || m.pristine())
		if frozen && i < len(encoded) && encoded[i].data != nil && encoded[i].key == keyOf(m) {
			b.Write(encoded[i].data)
			continue
		}
		// The current milestone is laid out for people to read; every
		// other one takes a line, so that what a long run has settled
		// weighs on each save no more than it must.
		var data []byte
		if i == st.MilestoneIndex {
			data, err = json.MarshalIndent(m, "    ", "  ")
		} else {
			data, err = json.Marshal(m)
		}
		if err != nil {
			return nil, err
		}
		b.Write(data)
		if frozen && c != nil {
			for len(encoded) <= i {
				encoded = append(encoded, milestoneCache{})
			}
			encoded[i] = milestoneCache{key: keyOf(m), data: data}
		}
	}
	if len(st.Milestones) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	return b.Bytes(), nil
}

// milestoneBytes is the size of the cached milestone encodings, to size
// the buffer once.
func milestoneBytes(encoded []milestoneCache, milestones int) int {
	n := 0
	for _, c := range encoded {
		n += len(c.data) + 8
	}
	return n + 256*max(milestones-len(encoded), 0)
}
