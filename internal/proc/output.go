package proc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// sink receives the combined output of a process: it streams it to the log
// file, keeps a bounded tail and remembers when the last byte arrived.
type sink struct {
	mu      sync.Mutex
	log     *os.File
	logPath string
	logErr  error
	ring    ring
	n       int64

	// A log with a cap (logCap > 0) takes the output's first headCap bytes
	// as they come; the rest go round a file of tailCap bytes (tailFile,
	// unlinked: nothing is left behind) that close appends after a line
	// counting what it left out. Neither half is held in memory.
	logCap, headCap, tailCap int64
	head                     int64 // bytes written to the log so far
	tailFile                 *os.File
	tailN                    int64 // bytes sent round the tail file
	omitted                  int64 // set by close

	base time.Time    // monotonic origin for last
	last atomic.Int64 // nanoseconds after base of the latest write
}

func newSink(logPath string, tailBytes int, logCap int64) (*sink, error) {
	s := &sink{logPath: logPath, ring: ring{size: tailBytes}, base: time.Now()}
	if logCap > 0 {
		s.logCap, s.headCap = logCap, logCap/2
		s.tailCap = logCap - s.headCap
	}
	if logPath != "" {
		// O_NOFOLLOW: a symlink planted at the log path is refused, not written through.
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open log: %w; check that its directory exists and is writable", err)
		}
		s.log = f
	}
	return s, nil
}

func (s *sink) write(p []byte) {
	s.last.Store(int64(time.Since(s.base)))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += int64(len(p))
	s.ring.write(p)
	// After a failed write the log is abandoned but the process keeps being
	// drained: a full disk must not block the child on a full pipe.
	if s.log != nil && s.logErr == nil {
		s.logErr = s.writeLog(p)
	}
}

// writeLog writes p to the log, or past a cap's head round the tail file.
func (s *sink) writeLog(p []byte) error {
	if s.logCap == 0 {
		_, err := s.log.Write(p)
		return err
	}
	if room := s.headCap - s.head; room > 0 {
		n := int(min(room, int64(len(p))))
		if _, err := s.log.Write(p[:n]); err != nil {
			return err
		}
		s.head += int64(n)
		p = p[n:]
	}
	if len(p) == 0 {
		return nil
	}
	if s.tailFile == nil {
		f, err := os.CreateTemp(filepath.Dir(s.logPath), "."+filepath.Base(s.logPath)+".tail-")
		if err != nil {
			return err
		}
		// Unlinked at once: the file lives while runr holds it, and a runr
		// killed here leaves nothing in the run directory.
		os.Remove(f.Name())
		s.tailFile = f
	}
	if int64(len(p)) > s.tailCap {
		// Bytes that a later part of the same write pushes out of the tail
		// are not written at all.
		skip := int64(len(p)) - s.tailCap
		s.tailN += skip
		p = p[skip:]
	}
	for len(p) > 0 {
		off := s.tailN % s.tailCap
		n := int(min(s.tailCap-off, int64(len(p))))
		if _, err := s.tailFile.WriteAt(p[:n], off); err != nil {
			return err
		}
		s.tailN += int64(n)
		p = p[n:]
	}
	return nil
}

// finishTail appends the tail file to the log in order, after a line that
// counts the bytes left out between the head and the tail, if any.
func (s *sink) finishTail() error {
	f := s.tailFile
	s.tailFile = nil
	defer f.Close()
	kept := min(s.tailN, s.tailCap)
	s.omitted = s.tailN - kept
	if s.omitted > 0 {
		note := fmt.Sprintf("\n[runr: %d bytes of output left out here; the log keeps the first %d and the last %d bytes of %d (agent.log_cap, %d bytes)]\n",
			s.omitted, s.head, kept, s.n, s.logCap)
		if _, err := io.WriteString(s.log, note); err != nil {
			return err
		}
	}
	start := s.tailN % s.tailCap
	if s.tailN <= s.tailCap {
		start = 0
	}
	// The oldest kept byte is at start; the ring wraps at kept.
	if _, err := io.Copy(s.log, io.NewSectionReader(f, start, kept-start)); err != nil {
		return err
	}
	_, err := io.Copy(s.log, io.NewSectionReader(f, 0, start))
	return err
}

// touch records n bytes of output that went elsewhere (Spec.Stdout): they
// count as activity and in the total, but not in the log or the tail.
func (s *sink) touch(n int) {
	s.last.Store(int64(time.Since(s.base)))
	s.mu.Lock()
	s.n += int64(n)
	s.mu.Unlock()
}

// quietFor is how long ago the last byte arrived (or the sink was made).
func (s *sink) quietFor() time.Duration {
	return time.Since(s.base) - time.Duration(s.last.Load())
}

func (s *sink) tail() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.bytes()
}

func (s *sink) total() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// close closes the log and reports the first error writing it.
func (s *sink) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tailFile != nil {
		if s.logErr == nil && s.log != nil {
			s.logErr = s.finishTail()
		} else {
			s.tailFile.Close()
			s.tailFile = nil
		}
	}
	err := s.logErr
	if s.log != nil {
		if cerr := s.log.Close(); err == nil {
			err = cerr
		}
		s.log = nil
	}
	if err != nil {
		return fmt.Errorf("write log %s: %w", s.logPath, err)
	}
	return nil
}

// ring keeps the last size bytes written to it. Its buffer grows with what
// is written until it holds size bytes, and then wraps: a process that
// prints a line costs a line.
type ring struct {
	size  int
	buf   []byte // the bytes in order while len(buf) < size; then the ring
	w     int    // once full, the next write position
	total int64
}

func (r *ring) write(p []byte) {
	r.total += int64(len(p))
	if room := r.size - len(r.buf); room > 0 {
		if len(p) <= room {
			r.buf = append(r.buf, p...)
			return
		}
		r.buf = append(r.buf, p[:room]...)
		p = p[room:]
	}
	if len(p) >= r.size {
		copy(r.buf, p[len(p)-r.size:])
		r.w = 0
		return
	}
	n := copy(r.buf[r.w:], p)
	copy(r.buf, p[n:])
	r.w = (r.w + len(p)) % r.size
}

func (r *ring) bytes() []byte {
	if len(r.buf) < r.size {
		return bytes.Clone(r.buf)
	}
	out := make([]byte, 0, r.size)
	out = append(out, r.buf[r.w:]...)
	return append(out, r.buf[:r.w]...)
}

// lineSplitter hands complete stdout lines to a callback, keeping at most max
// bytes of any one line so that a process printing without newlines cannot
// grow memory. A line that lies whole inside one read is handed over in place,
// without a copy; only the start of a line cut by a read boundary is kept.
type lineSplitter struct {
	max     int
	emit    func([]byte) bool
	starts  *[256]bool // nil: every line; else only non-empty lines whose first byte it marks
	abort   func()
	line    []byte // the start of a line a read boundary cut, at most max bytes
	pending bool   // bytes seen since the last newline
	stopped bool   // the callback asked to stop; later lines are not handed over
}

func (l *lineSplitter) feed(p []byte) {
	if l.stopped {
		// Nobody listens any more: only whether a line is open matters.
		if len(p) > 0 {
			l.pending = p[len(p)-1] != '\n'
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.add(p)
			return
		}
		if l.pending {
			l.add(p[:i])
			l.flush()
		} else if l.wants(p[:i]) {
			l.send(p[:min(i, l.max)])
		}
		p = p[i+1:]
	}
}

// wants reports whether line is one for emit.
func (l *lineSplitter) wants(line []byte) bool {
	return l.starts == nil || len(line) > 0 && l.starts[line[0]]
}

func (l *lineSplitter) add(p []byte) {
	l.pending = true
	if room := l.max - len(l.line); room > 0 {
		l.line = append(l.line, p[:min(room, len(p))]...)
	}
}

// flush hands over the line kept across reads.
func (l *lineSplitter) flush() {
	if l.wants(l.line) {
		l.send(l.line)
	}
	l.line, l.pending = l.line[:0], false
}

func (l *lineSplitter) send(line []byte) {
	if !l.stopped && !l.emit(line) {
		l.stopped = true
		l.abort()
	}
}

// Read sizes: large reads from the stdout pipe (grown to pipeSize) keep the
// system calls and wake-ups per byte low; stderr, read apart only when stdout
// is, carries messages. A read buffer starts at firstRead and doubles each
// time a read fills it, up to its most: most processes of a tick print a
// line or nothing, and a buffer a megabyte large for each of them would be
// garbage at every tick.
const (
	firstRead     = 4 << 10
	readBuf       = 1 << 20
	stderrReadBuf = 32 << 10
)

// readBuffer is a read buffer that grows up to max.
type readBuffer struct {
	buf []byte
	max int
}

func newReadBuffer(max int) *readBuffer {
	return &readBuffer{buf: make([]byte, min(firstRead, max)), max: max}
}

// read reads from r into the buffer; a read that filled it makes the next
// one larger. The bytes read stay valid until the next read.
func (b *readBuffer) read(r io.Reader) ([]byte, error) {
	n, err := r.Read(b.buf)
	p := b.buf[:n]
	if n == len(b.buf) && n < b.max {
		b.buf = make([]byte, min(2*n, b.max))
	}
	return p, err
}

// pump copies r into out until EOF or a read error (the pipe closed under
// it), reading into buf and handing each chunk and its lines over when
// given.
func pump(r io.Reader, buf *readBuffer, out *sink, chunk func([]byte), lines *lineSplitter) {
	for {
		p, err := buf.read(r)
		if len(p) > 0 {
			out.write(p)
			if chunk != nil {
				chunk(p)
			}
			if lines != nil {
				lines.feed(p)
			}
		}
		if err != nil {
			break
		}
	}
	if lines != nil && lines.pending {
		lines.flush()
	}
}

// pumpTo copies r into w until EOF or a read error. After w fails the rest
// is read and dropped: a child must never block on a full pipe.
func pumpTo(r io.Reader, buf *readBuffer, w io.Writer, out *sink) {
	var werr error
	for {
		p, err := buf.read(r)
		if len(p) > 0 {
			out.touch(len(p))
			if werr == nil {
				_, werr = w.Write(p)
			}
		}
		if err != nil {
			return
		}
	}
}

// Tail returns the last n lines of output, without the final newline, for
// messages. Bytes that are not valid UTF-8 (a tail cut mid-character) become
// U+FFFD.
func Tail(b []byte, n int) string {
	if n <= 0 {
		return ""
	}
	b = bytes.TrimRight(b, "\r\n")
	start, end := 0, len(b)
	for count := 0; ; {
		j := bytes.LastIndexByte(b[:end], '\n')
		if j < 0 {
			break
		}
		if count++; count == n {
			start = j + 1
			break
		}
		end = j
	}
	return strings.ToValidUTF8(string(b[start:]), "\uFFFD")
}
