package state

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// LockInfo says which process holds a run. It is written into the lock file
// for people and error messages; the flock, not this content, decides who
// holds the run.
type LockInfo struct {
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	StartedAt time.Time `json:"started_at"`
}

// Lock is a held run lock. The kernel releases it when the process dies, so
// a crashed runr never leaves a run locked.
type Lock struct {
	RunID string
	Info  LockInfo

	mu   sync.Mutex
	fl   *flock.Flock
	info *os.File // the same file, for writing the holder's info
	path string
}

func (s *Store) lockPath(id string) string {
	return filepath.Join(s.RunDir(id), lockFile)
}

// Acquire takes the lock of run id without waiting. A run held by a live
// process is run_locked, naming the holder; a lock whose holder died is free
// and is simply taken.
func (s *Store) Acquire(id string) (*Lock, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := s.mustExist(id); err != nil {
		return nil, err
	}
	l, err := newLock(id, s.lockPath(id))
	if err != nil {
		return nil, err
	}
	// Holding the lock, this process is the only writer of the run: what
	// an earlier runr killed in the middle of a write left is garbage now.
	s.removeRunTemps(id)
	return l, nil
}

// newLock takes the lock at path, the lock file of run id, without
// waiting, and writes this process's info into it.
func newLock(id, path string) (*Lock, error) {
	// The lock file is opened read-write so the same path can carry the
	// holder's info. It is never renamed or removed: a process that opened
	// the old inode would then lock a file nobody else looks at. Its
	// descriptors are close-on-exec (os.OpenFile's O_CLOEXEC), so no agent
	// process inherits the lock and keeps a dead runr's run "running"; and
	// O_NOFOLLOW, so a symlink planted in its place is never written through.
	// A FIFO or a directory in its place is refused before: flock opens
	// by path, and openLockInfo checks that what it locked is a regular file.
	if err := checkRecordType(path); err != nil {
		return nil, wrapIO(err, "lock run %s", id)
	}
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK), flock.SetPermissions(0o644))
	ok, err := tryLock(fl)
	if err != nil {
		if isSymlinkErr(err) {
			return nil, symlinkError(path)
		}
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "lock run %s (%s)", id, path)
	}
	if !ok {
		return nil, lockedError(id, readLockInfo(path))
	}
	info, err := openLockInfo(fl, path)
	if err != nil {
		fl.Unlock()
		return nil, err
	}
	host, _ := os.Hostname()
	l := &Lock{
		RunID: id,
		Info:  LockInfo{PID: os.Getpid(), Host: host, StartedAt: time.Now().UTC()},
		fl:    fl,
		info:  info,
		path:  path,
	}
	data, err := json.Marshal(l.Info)
	if err == nil {
		err = info.Truncate(0)
	}
	if err == nil {
		_, err = info.WriteAt(append(data, '\n'), 0)
	}
	if err != nil {
		info.Close()
		fl.Unlock()
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "write lock info to %s", path)
	}
	return l, nil
}

// openLockInfo opens the locked file a second time, for writing the
// holder's info, and makes sure it is the very file fl locked.
func openLockInfo(fl *flock.Flock, path string) (*os.File, error) {
	f, err := openNoFollow(path, os.O_RDWR, 0)
	if err != nil {
		return nil, wrapIO(err, "open lock %s", path)
	}
	locked, err1 := fl.Stat()
	opened, err2 := f.Stat()
	if err := errors.Join(err1, err2); err != nil {
		f.Close()
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "open lock %s", path)
	}
	if !os.SameFile(locked, opened) {
		f.Close()
		return nil, stopreasons.Errorf(stopreasons.StateCorrupt, "lock %s was replaced while runr took it; remove it and try again", path)
	}
	return f, nil
}

// probeWindow is how long Acquire keeps trying a lock it found taken. A
// probe of Locked holds it for a moment (a shared lock, taken and at once
// released), and a runr starting just then must not be turned away for it;
// a run really held by another runr is reported that much later.
const (
	probeWindow = 250 * time.Millisecond
	probeRetry  = 2 * time.Millisecond
)

// tryLock takes fl's exclusive lock without waiting on a holder, but rides
// out the brief shared locks of probes.
func tryLock(fl *flock.Flock) (bool, error) {
	deadline := time.Now().Add(probeWindow)
	for {
		ok, err := fl.TryLock()
		if ok || err != nil || !time.Now().Before(deadline) {
			return ok, err
		}
		time.Sleep(probeRetry)
	}
}

func lockedError(id string, info LockInfo) error {
	holder := "another runr process"
	if info.PID > 0 {
		holder = "runr process " + strconv.Itoa(info.PID)
		if info.Host != "" {
			holder += " on " + info.Host
		}
		if !info.StartedAt.IsZero() {
			holder += " (since " + info.StartedAt.Format(time.RFC3339) + ")"
		}
	}
	return stopreasons.Errorf(stopreasons.RunLocked,
		"run %s is held by %s; wait for it to finish or ask it to stop with `runr stop %s`", id, holder, id)
}

// readLockInfo reads the holder's info; a file being rewritten at that
// instant may be empty, which gives a zero LockInfo rather than an error.
func readLockInfo(path string) LockInfo {
	var info LockInfo
	if data, err := readFileNoFollow(path); err == nil {
		_ = json.Unmarshal(data, &info)
	}
	return info
}

// Release empties the lock file and releases the lock. Releasing twice is
// harmless.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl == nil {
		return nil
	}
	// Emptied while still held, so no later reader takes stale info for a holder.
	truncErr := l.info.Truncate(0)
	l.info.Close()
	if err := l.fl.Unlock(); err != nil {
		return stopreasons.Wrap(stopreasons.InternalError, err, "release lock %s", l.path)
	}
	l.fl = nil
	if truncErr != nil {
		return stopreasons.Wrap(stopreasons.InternalError, truncErr, "empty lock file %s", l.path)
	}
	return nil
}

// Locked reports whether a live process holds run id, and its info. It
// takes a shared lock and at once releases it, so that probes never see one
// another as holders, and Acquire waits out such a probe; a lock file that
// does not exist is free.
func (s *Store) Locked(id string) (bool, LockInfo, error) {
	if err := checkID(id); err != nil {
		return false, LockInfo{}, err
	}
	path := s.lockPath(id)
	// Opened by OpenRecord, so a probe never creates a lock file (in a run
	// directory that was removed meanwhile, for instance), and a FIFO or a
	// symlink in its place is state_corrupt rather than a wait.
	f, err := OpenRecord(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, LockInfo{}, nil
		}
		return false, LockInfo{}, wrapIO(err, "check lock %s", path)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, readLockInfo(path), nil
	}
	if err != nil {
		return false, LockInfo{}, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "check lock %s", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return false, LockInfo{}, stopreasons.Wrap(stopreasons.InternalError, err, "release lock %s", path)
	}
	return false, LockInfo{}, nil
}
