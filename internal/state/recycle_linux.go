package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// state.json is replaced at every tick, and replacing a file frees the old
// one's inode. Freed inodes are not free for long-running runs: ext4
// without a journal passes over every inode freed in the last half minute
// whenever it hands out a new one in that block group, and freeing one
// costs a truncate of its own. So runr keeps the previous state.json as
// the spare (.tmp-state.json-spare) and writes the next state into it: it
// is still a temporary file of the same directory, written, synced and
// then swapped with state.json by one rename (RENAME_EXCHANGE), which
// leaves the old state.json as the next spare; the directory is synced
// after. That is DESIGN §5's write, with the temporary file reused.
//
// A spare is written only when nothing else can see the write:
//   - it is the very inode this process left there (device and inode
//     number), a regular file with one name, opened without following a
//     symlink: nothing planted at the spare's name is written through;
//   - this process holds a write lease on it (F_SETLEASE), which the kernel
//     grants only while no other open file refers to it: a reader that
//     opened state.json before it became the spare keeps reading the
//     state it opened, unchanged; one that opens it while runr writes
//     waits until runr lets go, and then finds whole files.
// Otherwise the write takes a new temporary file, as WriteAtomic does.

// fileID names one inode.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: st.Ino} }

// spareSlot is what this process knows of one state.json.
type spareSlot struct {
	mu         sync.Mutex
	cur, spare fileID // the inodes at state.json and at the spare's name; zero: not known
	plain      bool   // the file system swaps no names or grants no leases: replace as WriteAtomic
}

var spares = struct {
	sync.Mutex
	m map[string]*spareSlot
}{m: map[string]*spareSlot{}}

func slotOf(path string) *spareSlot {
	spares.Lock()
	defer spares.Unlock()
	s := spares.m[path]
	if s == nil {
		s = &spareSlot{}
		spares.m[path] = s
	}
	return s
}

// writeState replaces the state.json at path with data, as WriteAtomic
// does, reusing the spare when it may.
func writeState(path string, data []byte) error {
	if err := checkNotSymlink(path); err != nil {
		return err
	}
	s := slotOf(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain {
		return WriteAtomic(path, data)
	}
	refilled, err := s.refill(path, data)
	if err != nil {
		return err
	}
	if !refilled {
		if err := s.replace(path, data); err != nil {
			return err
		}
	}
	return syncDir(filepath.Dir(path))
}

// dropSpare removes the spare of the state.json at path: its run has
// stopped, and a stopped run's directory holds no temporary file.
func dropSpare(path string) {
	spares.Lock()
	delete(spares.m, path)
	spares.Unlock()
	os.Remove(spareName(path))
}

// unsupported reports whether err says the file system cannot do what was
// asked (a lease, a swap), rather than that it may not now.
func unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}

// refill writes data into the spare and swaps it with state.json. It
// reports false, and leaves state.json as it was, when the spare may not be
// used; an error is one of writing (the disk is full).
func (s *spareSlot) refill(path string, data []byte) (bool, error) {
	if s.spare == (fileID{}) {
		return false, nil
	}
	spare := spareName(path)
	f, err := os.OpenFile(spare, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	fd := int(f.Fd())
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || idOf(&st) != s.spare {
		return false, nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		s.plain = unsupported(err)
		return false, nil
	}
	defer unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	if _, err := f.WriteAt(data, 0); err != nil {
		return false, fmt.Errorf("write %s: %w", spare, err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return false, fmt.Errorf("truncate %s: %w", spare, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("sync %s: %w", spare, err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); err != nil {
		return false, nil
	}
	s.cur, s.spare = s.spare, s.cur
	return true, nil
}

// replace writes data into a new temporary file and swaps it with
// state.json; the old state.json becomes the spare.
func (s *spareSlot) replace(path string, data []byte) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, tempPrefix+base+"-")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	tmp := f.Name()
	placed := false
	defer func() {
		if !placed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	// CreateTemp makes the file 0600; store files are ordinary files.
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if err == nil {
		placed = true
		prev := s.cur
		s.cur, s.spare = idOf(&st), fileID{}
		// tmp names the old state.json now; keep it as the spare. Should
		// the rename fail, it is an old state under a temporary name,
		// which the next Acquire or sweep removes.
		if os.Rename(tmp, spareName(path)) == nil {
			s.spare = prev
		}
		return nil
	}
	// No state.json to swap with (ENOENT), or a file system that cannot
	// swap: a plain rename.
	s.plain = unsupported(err)
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	placed = true
	s.cur = idOf(&st)
	return nil
}
