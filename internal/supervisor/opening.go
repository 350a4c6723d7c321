package supervisor

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/guard"
)

// opening is what the start of a run in the user's checkout reads of it:
// the dirty check's git status, which also gives HEAD, and the guard's
// snapshot. The two are read side by side, while the run is created and
// checked; no process of the run works in the checkout before the
// preflight has waited for both. A run that stops before it needs them
// (a refusal) ends them instead of waiting for a large tree's snapshot.
type opening struct {
	cancel     context.CancelFunc
	statusDone chan struct{}
	snapDone   chan struct{}
	status     guard.Status
	statusErr  error
	snap       *guard.Snapshot
	snapErr    error
}

// openCheckout starts reading the checkout at repo.
func openCheckout(ctx context.Context, repo string) *opening {
	ctx, cancel := context.WithCancel(ctx)
	o := &opening{cancel: cancel, statusDone: make(chan struct{}), snapDone: make(chan struct{})}
	// The snapshot, the longer of the two, first.
	go func() {
		defer close(o.snapDone)
		o.snap, o.snapErr = guard.TakeSnapshot(ctx, repo)
	}()
	go func() {
		defer close(o.statusDone)
		o.status, o.statusErr = guard.ReadStatus(ctx, repo)
	}()
	return o
}

// takeStatus is the status read with the run, or, when none was started
// (a resume that starts over), started now; waited for.
func (s *Supervisor) takeStatus(ctx context.Context) *opening {
	if s.opening == nil {
		s.opening = openCheckout(ctx, s.o.Repo)
	}
	<-s.opening.statusDone
	return s.opening
}

// takeSnapshot waits for the snapshot of the reads takeStatus returned,
// and is done with them.
func (s *Supervisor) takeSnapshot() *opening {
	o := s.opening
	s.opening = nil
	<-o.snapDone
	o.cancel()
	return o
}

// dropOpening ends the reads of the checkout that a run which stopped
// before the preflight took them left under way, and waits for them to
// end.
func (s *Supervisor) dropOpening() {
	if o := s.opening; o != nil {
		s.opening = nil
		o.cancel()
		<-o.statusDone
		<-o.snapDone
	}
}

// storeInside reports whether the run store home lies inside the checkout
// at repo, outside its .git (where the store is by default, and git never
// looks), so that creating a run changes what the checkout holds. Both
// are compared with their symlinks resolved.
func storeInside(home, repo string) bool {
	rel, err := filepath.Rel(realDir(repo), realDir(home))
	if err != nil {
		return true
	}
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return rel == "." || filepath.IsLocal(rel) && first != ".git"
}

// realDir is dir with its symlinks resolved, as far as it exists.
func realDir(dir string) string {
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	if parent := filepath.Dir(dir); parent != dir {
		return filepath.Join(realDir(parent), filepath.Base(dir))
	}
	return dir
}
