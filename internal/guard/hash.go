package guard

import (
	"context"
	"crypto/sha1" //nolint:gosec // git's object ids, not a security measure
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Object formats, as `git rev-parse --show-object-format` names them.
const (
	formatSHA1   = "sha1"
	formatSHA256 = "sha256"
)

// hashCache computes what hashPaths computes, in Go and without git: the
// git blob id of a regular file's bytes (as `git hash-object --no-filters`),
// or the marker of a symlink, directory, special or unreadable file. A
// file's id is kept with its stat data and reused while those stay the same
// and the file did not change too close to when it was read to trust them.
type hashCache struct {
	format string // the repository's object format
	files  map[string]cachedHash
}

type cachedHash struct {
	state    FileState // the stat data and the hash
	hashedAt int64     // when the hash was taken, Unix nanoseconds
}

func newHashCache(format string) *hashCache {
	if format == "" {
		format = formatSHA1
	}
	return &hashCache{format: format, files: map[string]cachedHash{}}
}

// state returns the FileState of path p (relative to top): DeletedHash for
// a path with no file.
func (c *hashCache) state(ctx context.Context, top, p string) (FileState, error) {
	full := filepath.Join(top, filepath.FromSlash(p))
	var st unix.Stat_t
	err := unix.Lstat(full, &st)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		delete(c.files, p)
		return FileState{Hash: DeletedHash}, nil
	case err != nil:
		return FileState{}, fmt.Errorf("inspect %s: %w", full, err)
	}
	fst := statState(&st)
	// A directory's marker names its HEAD, which its stat data does not
	// follow: it is read every time.
	if was, ok := c.files[p]; ok && sameStat(was.state, fst) && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		limit := was.hashedAt - racyWindow.Nanoseconds()
		if fst.Mtime < limit && fst.Ctime < limit {
			return was.state, nil
		}
	}
	now := time.Now().UnixNano()
	h, err := c.hashFile(ctx, full, &st)
	if err != nil {
		return FileState{}, err
	}
	fst.Hash = h
	c.files[p] = cachedHash{state: fst, hashedAt: now}
	return fst, nil
}

// ctxReader reads r until ctx ends: a file of terabytes (a sparse one
// reads as zeros as fast as the disk allows, for hours) is given up on at
// the run's deadline or a signal, not read to its end.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if stop, ok := c.ctx.Value(readStopKey{}).(context.Context); ok && stop.Err() != nil {
		return 0, stop.Err()
	}
	return c.r.Read(p)
}

type readStopKey struct{}

// WithReadStop returns ctx, under which the guard's reads of files'
// content also end when stop ends. The git commands of a look outlive a
// first signal (their results keep the run's records whole), but reading
// a file of the agent's, which may be of any size, does not.
func WithReadStop(ctx, stop context.Context) context.Context {
	return context.WithValue(ctx, readStopKey{}, stop)
}

// statState is the stat part of a FileState.
func statState(st *unix.Stat_t) FileState {
	return FileState{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino, Mode: uint32(st.Mode)}
}

// content is what the guard compares of a file: its hash, and for a
// regular file whether it is executable (the mode git records).
func (f FileState) content() string {
	if f.Mode&unix.S_IFMT == unix.S_IFREG && f.Mode&0o100 != 0 && !isDirMarker(f.Hash) && f.Hash != DeletedHash {
		return f.Hash + executableMark
	}
	return f.Hash
}

// unchangedSince reports whether a path whose content was was at the start
// has content now: the same, or a repository directory that a snapshot of
// an older runr, which did not read submodules, marked as a plain one.
func unchangedSince(was, now string) bool {
	return was == now || was == "directory" && strings.HasPrefix(now, "submodule:")
}

// executableMark follows the hash of an executable file in content.
const executableMark = "+x"

// sameStatT is sameStat for the stat data of a file now.
func sameStatT(f FileState, st *unix.Stat_t) bool {
	return sameStat(f, statState(st))
}

func sameStat(a, b FileState) bool {
	return a.Size == b.Size && a.Mtime == b.Mtime && a.Ctime == b.Ctime && a.Ino == b.Ino && a.Mode == b.Mode
}

// hashFile identifies the file at full, whose lstat is st, as hashPaths
// does.
func (c *hashCache) hashFile(ctx context.Context, full string, st *unix.Stat_t) (string, error) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := os.Readlink(full)
		if err != nil {
			return "", fmt.Errorf("read symlink %s: %w", full, err)
		}
		return "symlink:" + target, nil
	case unix.S_IFDIR:
		return dirMarker(full), nil
	case unix.S_IFREG:
	default:
		info, err := os.Lstat(full)
		if err != nil {
			return "", fmt.Errorf("inspect %s: %w", full, err)
		}
		return "special:" + info.Mode().Type().String(), nil
	}
	f, err := os.Open(full)
	if err != nil {
		// What can be seen of a file nobody can read still tells most
		// changes apart.
		return fmt.Sprintf("unreadable:%d:%d", st.Size, st.Mtim.Nano()), nil
	}
	defer f.Close()
	var h hash.Hash
	if c.format == formatSHA256 {
		h = sha256.New()
	} else {
		h = sha1.New() //nolint:gosec // git's object ids
	}
	h.Write([]byte("blob " + strconv.FormatInt(st.Size, 10) + "\x00"))
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return "", fmt.Errorf("read %s: %w", full, err)
	}
	if n != st.Size {
		// The file changed while it was read: no id of it is right, and
		// this one matches nothing; its new stat data has it read again.
		return fmt.Sprintf("changing:%d:%d", n, st.Mtim.Nano()), nil
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
