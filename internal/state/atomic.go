package state

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// WriteAtomic replaces path with data so that a reader sees either the old
// file or the new one, never a mix, even if the process is killed at any
// instant or the machine loses power: it writes a temporary file in the same
// directory (rename is atomic only within one file system), syncs it, renames
// it over path and syncs the directory so the rename itself is durable.
// An interrupted write leaves a ".tmp-" file behind and path untouched.
// A symlink at path is state_corrupt: the rename would only replace it, but
// a store file that is a symlink means someone else has been writing there.
func WriteAtomic(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := checkNotSymlink(path); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, tempPrefix+base+"-")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	tmp := f.Name()
	committed := false
	defer func() {
		if !committed {
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
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	committed = true
	return syncDir(dir)
}

// File is one file of WriteAtomicFiles: its name in the directory and
// its content.
type File struct {
	Name string
	Data []byte
}

// WriteAtomicFiles is WriteAtomic for several files of one directory,
// replaced in the order given, with one sync of their data before the
// first rename and one of the directory after the last: a reader, a SIGKILL
// or a power loss sees each file old or new, never partial, and once it
// returns all are new.
func WriteAtomicFiles(dir string, files []File) error {
	var temps []*os.File
	renamed := 0
	defer func() {
		for _, f := range temps[renamed:] {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for _, file := range files {
		path := filepath.Join(dir, file.Name)
		if err := checkNotSymlink(path); err != nil {
			return err
		}
		f, err := os.CreateTemp(dir, tempPrefix+file.Name+"-")
		if err != nil {
			return fmt.Errorf("create temporary file for %s: %w", path, err)
		}
		temps = append(temps, f)
		if _, err := f.Write(file.Data); err != nil {
			return fmt.Errorf("write %s: %w", f.Name(), err)
		}
		if err := f.Chmod(0o644); err != nil {
			return fmt.Errorf("chmod %s: %w", f.Name(), err)
		}
	}
	startWriteback(temps)
	for _, f := range temps {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", f.Name(), err)
		}
	}
	for i, f := range temps {
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", f.Name(), err)
		}
		path := filepath.Join(dir, files[i].Name)
		if err := os.Rename(f.Name(), path); err != nil {
			return fmt.Errorf("rename %s to %s: %w", f.Name(), path, err)
		}
		renamed++
	}
	return syncDir(dir)
}

// syncDir syncs directory dir. O_DIRECTORY: whatever else was put in its
// place (a FIFO would block the open for good) is an error at once.
func syncDir(dir string) error {
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open directory %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
