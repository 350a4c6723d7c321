package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// lookAtTree reads the tree after the call and gathers the guards'
// verdicts on it: git's own files, the scope, the protected files and the
// lockfiles.
func (s *Supervisor) lookAtTree(ctx context.Context) *GuardFacts {
	return s.lookAt(ctx, nil)
}

// lookAt is lookAtTree, leaving out of every verdict the changed paths
// skip names (nil: none).
func (s *Supervisor) lookAt(ctx context.Context, skip func(string) bool) *GuardFacts {
	st := s.st
	g := &GuardFacts{}
	failed := func(err error) *GuardFacts {
		g.Err, g.At = err, s.reading()
		return g
	}
	// Asked for beside the call, answered by now, or with a later call's
	// look or the stop: never waited for here.
	s.takeAgentVersion(false)
	// Read before any git call of the guards; the calls that follow run no
	// program such a file could name, so the stop can name every file.
	meta, err := s.changedGitMetadata(ctx)
	if err != nil {
		return failed(err)
	}
	hash, changed, committed, err := s.agentChanges(ctx)
	if err != nil {
		return failed(err)
	}
	g.Looked, g.Tree, g.Meta, g.Committed = true, hash, meta, committed
	// The task file is runr's input, read once when the run started: an
	// agent ticking its boxes is not out of scope.
	if skip != nil {
		changed = slices.DeleteFunc(changed, skip)
	}
	changed = slices.DeleteFunc(changed, s.ownAsResumed)
	inScope := slices.DeleteFunc(slices.Clone(changed), func(p string) bool { return p == st.Task.File })
	if g.Scope, err = guard.CheckScope(inScope, s.cfg.Scope.Allow, s.cfg.Scope.Deny); err != nil {
		return failed(err)
	}
	if g.Protected, err = s.protectedChanges(inScope, append(slices.Clone(meta), g.Scope...)); err != nil {
		return failed(err)
	}
	g.Lockfiles = guard.CheckLockfiles(changed, s.cfg.Scope.Lockfiles)
	return g
}

// protectedChanges returns the changed files that existed at the start of
// the run and match a scope.protect glob, leaving out those already in
// violations. A run without a snapshot of its start (an older runr's)
// cannot tell which files existed, and protects none.
func (s *Supervisor) protectedChanges(changed []string, violations []guard.Violation) ([]guard.Violation, error) {
	if len(s.cfg.Scope.Protect) == 0 {
		return nil, nil
	}
	snap, err := s.guardSnapshot()
	if err != nil || snap == nil {
		return nil, err
	}
	changed = slices.DeleteFunc(slices.Clone(changed), func(p string) bool {
		return slices.ContainsFunc(violations, func(v guard.Violation) bool { return v.Path == p })
	})
	out, err := snap.CheckProtect(changed, s.cfg.Scope.Protect)
	if err != nil {
		return nil, err
	}
	runners, err := snap.CheckRunners(changed, s.cfg.Scope.Protect)
	return append(out, runners...), err
}

// agentChanges returns the tree's fingerprint and, sorted, every path the
// agent changed since the run started: in the working tree, and in commits
// it made itself, which leave git status and so escape the baseline. The
// second list is the committed ones. Commits up to GuardHead (runr's own
// checkpoints) were judged before. The snapshot adds what git status no
// longer shows: files hidden by ignore rules or index bits the agent set.
// With the snapshot's Tracker this is one git process while HEAD stays.
func (s *Supervisor) agentChanges(ctx context.Context) (hash string, all, committed []string, err error) {
	base := guard.Baseline(s.st.Baseline)
	t, err := s.guardTracker()
	if err != nil {
		return "", nil, nil, err
	}
	if t != nil {
		look, err := t.Look(ctx, s.st.GuardHead, base)
		if err != nil {
			return "", nil, nil, err
		}
		s.delta = &look.Delta
		all = append(slices.Clone(look.Changed), look.Committed...)
		slices.Sort(all)
		return look.Fingerprint, slices.Compact(all), look.Committed, nil
	}
	// A run an older runr started, without the index in its snapshot.
	if hash, err = guard.TreeHash(ctx, s.dir); err != nil {
		return "", nil, nil, err
	}
	changed, err := guard.ChangedSince(ctx, s.dir, base)
	if err != nil {
		return "", nil, nil, err
	}
	committed, err = guard.CommittedChanges(ctx, s.dir, s.st.GuardHead, base)
	if err != nil {
		return "", nil, nil, err
	}
	all = append(changed, committed...)
	if snap, err := s.guardSnapshot(); err != nil {
		return "", nil, nil, err
	} else if snap != nil {
		hidden, err := snap.ChangedFiles(ctx, s.dir)
		if err != nil {
			return "", nil, nil, err
		}
		all = append(all, hidden...)
	}
	slices.Sort(all)
	return hash, slices.Compact(all), committed, nil
}

// guardTracker is the Tracker of the run's snapshot, made on first use; nil
// for a snapshot that cannot have one (an older runr's) or no snapshot.
func (s *Supervisor) guardTracker() (*guard.Tracker, error) {
	if s.tracker != nil || s.noTracker {
		return s.tracker, nil
	}
	snap, err := s.guardSnapshot()
	if err != nil {
		return nil, err
	}
	if snap == nil {
		s.noTracker = true
		return nil, nil
	}
	t, err := snap.NewTracker(s.store.RunDir(s.st.RunID))
	if errors.Is(err, guard.ErrNoIndexSnapshot) {
		s.noTracker = true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.tracker = t
	return t, nil
}

// changedGitMetadata returns a violation for each of git's own files that
// can start programs or hide changes (.git/config, .git/info/*,
// .git/hooks/*) and changed since the start.
func (s *Supervisor) changedGitMetadata(ctx context.Context) ([]guard.Violation, error) {
	snap, err := s.guardSnapshot()
	if err != nil || snap == nil {
		return nil, err
	}
	files, err := snap.ChangedMeta(ctx, s.dir)
	if err != nil {
		return nil, err
	}
	var out []guard.Violation
	for _, f := range files {
		out = append(out, guard.Violation{Path: f, Rule: guard.RuleGitMetadata})
	}
	return out, nil
}

// snapshotFile is the run dir's file that keeps the guard snapshot.
const snapshotFile = guard.SnapshotFile

// saveSnapshot keeps the guard snapshot in the run dir, for a resume.
func (s *Supervisor) saveSnapshot() error {
	data, err := s.snap.Encode()
	if err != nil {
		return err
	}
	return s.store.WriteRunFile(s.st.RunID, snapshotFile, data)
}

// guardSnapshot is the snapshot taken when the run started, read from the
// run dir after a resume; nil for a run an older runr started.
func (s *Supervisor) guardSnapshot() (*guard.Snapshot, error) {
	if s.snap == nil {
		data, err := s.store.ReadRunFile(s.st.RunID, snapshotFile)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if s.snap, err = guard.DecodeSnapshot(data); err != nil {
			// The snapshot is what the guards judge the run against: a
			// damaged one is the run's record damaged, not a guard failure.
			return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err, "%s",
				filepath.Join(s.store.RunDir(s.st.RunID), snapshotFile))
		}
		s.snap.Pin(s.dir)
	}
	return s.snap, nil
}

// maxOwnFile is the most of a task or config file that is read for its
// digest: far beyond any runr.yaml.
const maxOwnFile = 4 << 20

// ownDigests are the digests of runr's own files (ownFiles) in the work
// tree as they are now; a file that cannot be read as a regular file has
// none.
func (s *Supervisor) ownDigests() map[string]string {
	out := map[string]string{}
	for _, p := range s.ownFiles() {
		if d, ok := fileDigest(filepath.Join(s.dir, p)); ok {
			out[p] = d
		}
	}
	return out
}

// ownAsResumed reports whether changed path p is one of runr's own files
// as the resume found it: the person edited it between the stop and the
// resume, and the resume took the edit. An agent's later change of it is
// judged as any other.
func (s *Supervisor) ownAsResumed(p string) bool {
	want, ok := s.resumedOwn[p]
	if !ok {
		return false
	}
	got, ok := fileDigest(filepath.Join(s.dir, p))
	return ok && got == want
}

// fileDigest is the SHA-256 of a regular file's content, read without
// following a link or waiting on a FIFO the agent may have put there.
func fileDigest(path string) (string, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxOwnFile {
		return "", false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxOwnFile)); err != nil {
		return "", false
	}
	return hex.EncodeToString(h.Sum(nil)), true
}
