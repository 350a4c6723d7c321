package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// state.json is replaced at every tick, and replacing a file frees the old
// one's inode. Freed inodes are not free for long-running runs: ext4
// without a journal passes over every inode freed in the last half minute
// whenever it hands out a new one in that block group, and freeing one
// costs a truncate of its own. So runr keeps the previous state.json as
// the spare (.tmp-state.json-spare) and writes the next state into it: it
// is still a temporary file of the same directory, emptied, written, synced
// and then swapped with state.json by one rename (RENAME_EXCHANGE), which
// leaves the old state.json as the next spare; the directory is synced
// after. That is DESIGN §5's write, with the temporary file reused.
//
// A spare is written only when nothing else can see the write:
//   - it is the very inode this process left there (device and inode
//     number), a regular file with one name, mode 0644 and no ACL, opened
//     without following a symlink: nothing planted at the spare's name is
//     written through, and nothing granted on it lasts into state.json;
//   - this process holds a write lease on it (F_SETLEASE), which the kernel
//     grants only while no other open file refers to it: a reader that
//     opened state.json before it became the spare keeps reading the
//     state it opened, unchanged; one that opens it while runr writes
//     waits until runr lets go, and then finds whole files;
//   - it is emptied before it is written, so the pages of the old state
//     that a reader handed on without keeping the file open (spliced into
//     a pipe, sent with sendfile) keep what they held: new pages take the
//     new state. It is emptied, under the same checks and lease, right
//     after the save that made it the spare, beside the work that follows,
//     since freeing its blocks waits for the disk;
//   - the file system is a local one this kernel alone writes (ext4, xfs,
//     btrfs, f2fs, tmpfs): a lease on a network or FUSE file system knows
//     nothing of the readers on other machines.
// Otherwise the write takes a new temporary file, as WriteAtomic does.

// fileID names one inode.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: st.Ino} }

// spareSlot is what this process knows of one state.json.
type spareSlot struct {
	mu         sync.Mutex
	cur, spare fileID // the inodes at state.json and at the spare's name; zero: not known
	empty      bool   // the spare was emptied since it was swapped out
	emptying   sync.WaitGroup
	plain      bool // no spare on this file system: replace as WriteAtomic
	checked    bool // the file system was looked at
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
	if !s.checked {
		s.checked, s.plain = true, !localFS(filepath.Dir(path))
	}
	if s.plain {
		return WriteAtomic(path, data)
	}
	cur, spare, refilled, err := s.refill(path, data)
	if err == nil && !refilled {
		cur, spare, err = s.replace(path, data)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		// What the disk holds under each name is not known now: the next
		// save takes a new file, and never writes one that may still be
		// state.json there.
		s.cur, s.spare = fileID{}, fileID{}
		return err
	}
	s.cur, s.spare, s.empty = cur, spare, false
	if spare != (fileID{}) && emptyAfterSave {
		s.emptying.Go(func() { s.emptySpare(path, spare) })
	}
	return nil
}

// emptyAfterSave says whether a new spare is emptied right after its save;
// otherwise the save that writes it next empties it first.
var emptyAfterSave = true

// emptySpare empties the spare of the state.json at path, if it is still
// the inode want and may be written; one that may not is given up.
func (s *spareSlot) emptySpare(path string, want fileID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spare != want || s.empty {
		return
	}
	f, ok := openSpare(spareName(path), want)
	if !ok {
		s.spare = fileID{}
		return
	}
	defer closeSpare(f)
	s.empty = f.Truncate(0) == nil
}

// openSpare opens the spare at name for writing when it is the inode want,
// a regular file of mode 0644 with one name and no ACL, and takes a write
// lease on it, which no other open file of it allows. closeSpare lets go.
func openSpare(name string, want fileID) (*os.File, bool) {
	f, err := os.OpenFile(name, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	fd := int(f.Fd())
	var st unix.Stat_t
	ok := unix.Fstat(fd, &st) == nil && st.Mode == unix.S_IFREG|0o644 && st.Nlink == 1 && idOf(&st) == want
	if ok {
		_, aerr := unix.Fgetxattr(fd, "system.posix_acl_access", nil)
		ok = errors.Is(aerr, unix.ENODATA) || errors.Is(aerr, unix.EOPNOTSUPP)
	}
	if ok {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK)
		ok = err == nil
	}
	if !ok {
		f.Close()
		return nil, false
	}
	return f, true
}

func closeSpare(f *os.File) {
	unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
	f.Close()
}

// dropSpare removes the spare of the state.json at path: its run has
// stopped, and a stopped run's directory holds no temporary file.
func dropSpare(path string) {
	spares.Lock()
	s := spares.m[path]
	delete(spares.m, path)
	spares.Unlock()
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cur, s.spare = fileID{}, fileID{}
	}
	os.Remove(spareName(path))
}

// localFS reports whether dir lies on a local file system whose leases see
// every reader.
func localFS(dir string) bool {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return false
	}
	switch uint32(fs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// unsupported reports whether err says the file system cannot do what was
// asked (a lease, a swap), rather than that it may not now.
func unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}

// refill writes data into the spare and swaps it with state.json, and
// returns the inodes then at state.json and at the spare's name. It
// reports false, and leaves state.json as it was, when the spare may not be
// used; an error is one of writing (the disk is full).
func (s *spareSlot) refill(path string, data []byte) (cur, spare fileID, ok bool, err error) {
	if s.spare == (fileID{}) {
		return
	}
	name := spareName(path)
	f, usable := openSpare(name, s.spare)
	if !usable {
		return
	}
	defer closeSpare(f)
	if !s.empty {
		if err = f.Truncate(0); err != nil {
			return cur, spare, false, fmt.Errorf("empty %s: %w", name, err)
		}
	}
	if _, err = f.WriteAt(data, 0); err != nil {
		return cur, spare, false, fmt.Errorf("write %s: %w", name, err)
	}
	if err = f.Sync(); err != nil {
		return cur, spare, false, fmt.Errorf("sync %s: %w", name, err)
	}
	if unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE) != nil {
		return cur, spare, false, nil
	}
	return s.spare, s.cur, true, nil
}

// replace writes data into a new temporary file and swaps it with
// state.json; the old state.json becomes the spare. It returns the inodes
// then at state.json and at the spare's name.
func (s *spareSlot) replace(path string, data []byte) (cur, spare fileID, err error) {
	dir, base := filepath.Split(path)
	tmp, fi, err := writeTemp(dir, base, data)
	if err != nil {
		return cur, spare, fmt.Errorf("%w (for %s)", err, path)
	}
	placed := false
	defer func() {
		if !placed {
			os.Remove(tmp)
		}
	}()
	st := fi.Sys().(*syscall.Stat_t)
	cur = fileID{dev: uint64(st.Dev), ino: st.Ino}
	var old unix.Stat_t
	if unix.Lstat(path, &old) == nil && old.Mode&unix.S_IFMT == unix.S_IFREG {
		xerr := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
		if xerr == nil {
			placed = true
			// tmp names the old state.json now: it is the spare. Where
			// that cannot be (something else holds the spare's name), it
			// goes, so that no save leaves a file behind.
			if os.Rename(tmp, spareName(path)) != nil {
				os.Remove(tmp)
				return cur, fileID{}, nil
			}
			if s.cur == idOf(&old) {
				spare = s.cur
			}
			return cur, spare, nil
		}
		s.plain = unsupported(xerr)
	}
	// No state.json to swap with, or a file system that cannot swap: a
	// plain rename.
	if err := os.Rename(tmp, path); err != nil {
		return fileID{}, fileID{}, fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	placed = true
	return cur, fileID{}, nil
}
