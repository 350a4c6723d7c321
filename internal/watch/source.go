package watch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// maxEvent bounds one timeline line the dashboard reads, as `runr logs` does.
const maxEvent = 1 << 20

// Run is one run as the dashboard shows it.
type Run struct {
	ID     string
	Status string // run_status as `runr status` shows it (crashed for a dead holder)
	Live   bool   // a runr process holds it

	// The rest is known for live runs (read from their whole state.json)
	// and, in part, for stopped ones (from their summary).
	Phase      string
	Tick       int
	Milestone  int // 1-based, the one worked on now
	Milestones int
	Approved   int
	Goal       string
	// Workers is the number of worker slots state.json holds (parallel
	// runs); 0 when it holds none, and the field is not shown.
	Workers    int
	Elapsed    time.Duration
	Budget     time.Duration
	CostUSD    float64
	MaxCostUSD float64
	Closest    *Rule
	Activity   string
	// Stop is the stop reason's code of a run that stopped, with its exit code.
	Stop     string
	ExitCode int
	// Err says why the run could not be read.
	Err string
}

// Rule is a stop rule and how close it is to firing.
type Rule struct {
	Name     string
	Progress float64
	Message  string
}

// Source reads the runs of a store as `runr status` does: the bounded
// summary of each state.json (read again only when the file changed), the
// whole state.json of live runs only, and each live run's timeline followed
// from where the last read stopped. It writes nothing. A Source is used by
// one goroutine at a time.
type Source struct {
	Store *state.Store
	// Recent is how many runs that are not live are listed below the live ones.
	Recent int
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	runs map[string]*cached
}

type cached struct {
	mod     time.Time
	size    int64
	ino     uint64
	sum     *state.Summary
	sumErr  error
	st      *state.State // live runs only
	rules   *stopconditions.Rules
	workers int
	tl      *state.TimelineFollower
	latest  string // the latest agent activity
}

// NewSource reads the runs of store.
func NewSource(store *state.Store) *Source {
	return &Source{Store: store, Recent: 5, runs: map[string]*cached{}}
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Close releases the timelines the source follows.
func (s *Source) Close() {
	for _, c := range s.runs {
		if c.tl != nil {
			c.tl.Close()
		}
	}
}

// Runs lists the live runs, newest first, then up to Recent other runs,
// newest first.
func (s *Source) Runs() ([]Run, error) {
	ids, err := s.Store.List()
	if err != nil {
		return nil, err
	}
	if s.runs == nil {
		s.runs = map[string]*cached{}
	}
	seen := make(map[string]bool, len(ids))
	var live, other []Run
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		seen[id] = true
		c := s.summary(id)
		if c.sumErr != nil {
			if len(other) < s.Recent {
				other = append(other, Run{ID: id, Status: "unreadable", Err: c.sumErr.Error()})
			}
			continue
		}
		status := s.Store.LiveStatus(id, c.sum.RunStatus)
		if status == stopreasons.RunRunning {
			live = append(live, s.liveRun(id, c))
			continue
		}
		s.forget(c)
		if len(other) < s.Recent {
			other = append(other, stoppedRun(c.sum, status))
		}
	}
	for id, c := range s.runs {
		if !seen[id] {
			s.forget(c)
			delete(s.runs, id)
		}
	}
	return append(live, other...), nil
}

// summary is the run's summary, read again only when its state.json
// changed: another file (inode), time or size.
func (s *Source) summary(id string) *cached {
	c := s.runs[id]
	if c == nil {
		c = &cached{}
		s.runs[id] = c
	}
	fi, err := os.Stat(s.Store.StatePath(id))
	if err == nil && c.sum != nil && fi.ModTime().Equal(c.mod) && fi.Size() == c.size && inode(fi) == c.ino {
		return c
	}
	c.sum, c.sumErr = s.Store.Summary(id)
	c.st = nil
	if err == nil {
		c.mod, c.size, c.ino = fi.ModTime(), fi.Size(), inode(fi)
	}
	return c
}

// inode is the file's inode number: state.json is replaced by a rename,
// so a new write is a new file even within the clock's resolution.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// forget drops what only a live run needs.
func (s *Source) forget(c *cached) {
	if c.tl != nil {
		c.tl.Close()
	}
	c.st, c.tl, c.latest, c.rules = nil, nil, "", nil
}

func stoppedRun(sum *state.Summary, status string) Run {
	r := Run{ID: sum.RunID, Status: status, Tick: sum.Tick, Approved: sum.Approved, Milestones: sum.Milestones,
		Elapsed: time.Duration(sum.ElapsedMS) * time.Millisecond}
	if sum.Stop != "" && status != stopreasons.RunCrashed {
		r.Stop, r.ExitCode = string(sum.Stop), stopreasons.ExitCode(sum.Stop)
	}
	return r
}

// liveRun reads what a live run shows beyond its summary: its state.json,
// the rules it started with (config.json), and the agent's latest activity.
func (s *Source) liveRun(id string, c *cached) Run {
	if c.st == nil {
		st, err := s.Store.Load(id)
		if err != nil {
			return Run{ID: id, Status: stopreasons.RunRunning, Live: true, Err: err.Error()}
		}
		c.st = st
		c.workers = workerSlots(s.Store.StatePath(id))
	}
	if c.rules == nil {
		r := recordedRules(s.Store.RunDir(id))
		c.rules = &r
	}
	if c.tl == nil {
		c.tl = state.FollowTimeline(s.Store.TimelinePath(id), maxEvent)
	}
	_ = c.tl.Poll(func(ev state.Event) error {
		if a := activityText(ev); a != "" {
			c.latest = a
		}
		return nil
	})
	st := c.st
	r := Run{
		ID: id, Status: stopreasons.RunRunning, Live: true,
		Phase: st.Phase, Tick: st.Tick, Milestones: len(st.Milestones), Approved: st.Statistics.Approved,
		Workers: c.workers, Budget: time.Duration(st.Budget.TimeMS) * time.Millisecond,
		CostUSD: st.Usage.CostUSD, MaxCostUSD: st.Budget.MaxCostUSD, Activity: c.latest,
	}
	r.Milestone = min(st.MilestoneIndex+1, len(st.Milestones))
	if i := r.Milestone - 1; i >= 0 {
		r.Goal = st.Milestones[i].Goal
	}
	// Elapsed time counts while runr works on the run: what the last write
	// of state.json recorded, and the time since.
	r.Elapsed = state.Elapsed(st.ElapsedMS, st.UpdatedAt, true, time.Time{}, s.now())
	r.Closest = closest(Rules(st, *c.rules, r.Elapsed))
	return r
}

// activityText is what an event says the agent is doing, "" for events
// that say nothing of it.
func activityText(ev state.Event) string {
	switch d := ev.Data.(type) {
	case state.ActivityEvent:
		switch d.Kind {
		case "tool":
			return "> " + d.Tool + " " + d.Text
		case "tool_error":
			return "! " + d.Tool + " failed: " + d.Text
		default:
			return "\" " + d.Text
		}
	case state.ProcessStartedEvent:
		what := "agent"
		if ev.Phase != state.PhaseImplement {
			what = ev.Phase
		}
		return what + " started (" + filepath.Base(d.Argv0) + ")"
	}
	return ""
}

// workerSlots counts the worker slots of a parallel run's state.json
// (DESIGN §11), which state.State does not read; 0 for a sequential run.
func workerSlots(path string) int {
	data, err := state.ReadRecord(path)
	if err != nil {
		return 0
	}
	var v struct {
		Workers []json.RawMessage `json:"workers"`
	}
	if json.Unmarshal(data, &v) != nil {
		return 0
	}
	return len(v.Workers)
}
