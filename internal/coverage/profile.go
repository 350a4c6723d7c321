package coverage

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Limits on what is read of profiles: a verify command, and so the agent,
// writes them, so none of them may hold runr's memory or time.
const (
	// MaxProfileBytes is the largest profile read; a larger one is named in
	// the feedback and left out.
	MaxProfileBytes = 256 << 20
	// maxLine is the longest line of a Go profile or LCOV file, and the
	// longest run of an XML file without a tag.
	maxLine = 1 << 20
	// maxProfiles is the most profiles read after one verify.
	maxProfiles = 200
	// maxSources is the most Cobertura <source> entries kept.
	maxSources = 32
)

// Source is where a verify run's profiles are: the work tree and its
// globs, and the run's coverage directory.
type Source struct {
	WorkTree string   // absolute
	Dir      string   // the run's coverage directory, absolute; "" for none
	Patterns []string // verify.coverage.profiles
	// Keep names the work tree's files that are not runr's to remove or
	// read, whatever the globs match: those that were there when the run
	// started (a tracked file, a person's own). Only what the run made is
	// a profile. nil keeps nothing.
	Keep func(rel string) bool
}

// Clear removes the profiles a verify run could find, so that a stale one
// never counts: it empties the coverage directory and removes the regular
// files and links in the work tree that the globs match, but those Keep
// names.
func (s Source) Clear() error {
	if s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			return fmt.Errorf("empty the coverage directory %s: %w", s.Dir, err)
		}
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return fmt.Errorf("make the coverage directory %s: %w", s.Dir, err)
		}
	}
	globs := WorkTreeGlobs(s.Patterns)
	if len(globs) == 0 {
		return nil
	}
	root, err := os.OpenRoot(s.WorkTree)
	if err != nil {
		return fmt.Errorf("open the work tree %s: %w", s.WorkTree, err)
	}
	defer root.Close()
	for _, rel := range s.workTreeMatches(root, globs) {
		if fi, err := root.Lstat(rel); err == nil && !fi.IsDir() {
			if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove the old coverage profile %s: %w", rel, err)
			}
		}
	}
	return nil
}

// workTreeMatches lists the work tree's paths that the globs match,
// without following links to directories.
func (s Source) workTreeMatches(root *os.Root, globs []string) []string {
	var out []string
	for _, g := range globs {
		if !doublestar.ValidatePattern(g) || g == ".." || strings.HasPrefix(g, "../") || path.IsAbs(g) {
			continue
		}
		m, _ := doublestar.Glob(root.FS(), g, doublestar.WithNoFollow(), doublestar.WithFilesOnly())
		for _, rel := range m {
			if s.Keep == nil || !s.Keep(rel) {
				out = append(out, rel)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Report is what the profiles of one verify run say about the changed
// lines.
type Report struct {
	// Profiles counts the profiles read.
	Profiles int
	// lines holds, for each changed file a profile names, its changed
	// lines the profile calls executable: true when one ran.
	lines map[string]map[int]bool
	// langs are the languages of the work tree's files the profiles name.
	langs map[string]bool
	// Notes are what could not be read, for the attempt's feedback.
	Notes []string
}

// Read reads the profiles the verify run wrote and keeps what they say of
// the changed lines only, so memory follows the change, not the profiles.
func (s Source) Read(changed Changed) Report {
	r := Report{lines: map[string]map[int]bool{}, langs: map[string]bool{}}
	m := newMatcher(s.WorkTree, changed)
	var list []profileFile
	if s.Dir != "" {
		// The directory is opened only as the directory runr made: a link
		// put in its place would lead the reads elsewhere.
		if fi, err := os.Lstat(s.Dir); err == nil && !fi.IsDir() {
			r.Notes = append(r.Notes, fmt.Sprintf("the coverage directory $%s was replaced by something other than a directory; it was not read", DirVar))
		} else if root, err := os.OpenRoot(s.Dir); err == nil {
			defer root.Close()
			list = append(list, dirFiles(root)...)
		} else if !errors.Is(err, fs.ErrNotExist) {
			r.Notes = append(r.Notes, fmt.Sprintf("the coverage directory $%s could not be opened: %v", DirVar, err))
		}
	}
	if globs := WorkTreeGlobs(s.Patterns); len(globs) > 0 {
		if root, err := os.OpenRoot(s.WorkTree); err == nil {
			defer root.Close()
			for _, rel := range s.workTreeMatches(root, globs) {
				list = append(list, profileFile{root: root, rel: rel, shown: rel})
			}
		}
	}
	if len(list) > maxProfiles {
		r.Notes = append(r.Notes, fmt.Sprintf("%d coverage profiles were found; only the first %d were read", len(list), maxProfiles))
		list = list[:maxProfiles]
	}
	for _, p := range list {
		if err := p.read(m, &r); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("coverage profile %s: %v", p.shown, err))
			continue
		}
		r.Profiles++
	}
	if m.outside > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("the profiles name %s outside the work tree; they were not counted", stopreasons.Plural(m.outside, "file")))
	}
	return r
}

// profileFile is one profile to read, relative to its root.
type profileFile struct {
	root  *os.Root
	rel   string
	shown string // as the feedback names it
}

// dirFiles lists every file under the coverage directory: whatever verify
// wrote there is a profile.
func dirFiles(root *os.Root) []profileFile {
	var out []profileFile
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." || d.IsDir() {
			return nil
		}
		// A dot file is a tool's own data beside its report (coverage.py's
		// .coverage database), not a profile.
		if strings.HasPrefix(path.Base(p), ".") {
			return nil
		}
		if len(out) > maxProfiles {
			return fs.SkipAll
		}
		out = append(out, profileFile{root: root, rel: p, shown: "$" + DirVar + "/" + p})
		return nil
	})
	return out
}

// read opens one profile as a regular file, never through a link and
// never blocking on a FIFO, and parses it by its content.
func (p profileFile) read(m *matcher, r *Report) error {
	fi, err := p.root.Lstat(p.rel)
	if err != nil {
		return err
	}
	if err := regular(fi); err != nil {
		return err
	}
	f, err := p.root.OpenFile(p.rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return err
	}
	if err := regular(fi); err != nil {
		return err
	}
	br := bufio.NewReaderSize(io.LimitReader(f, MaxProfileBytes), 64<<10)
	head, _ := br.Peek(512)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	switch {
	case bytes.HasPrefix(head, []byte("mode:")):
		return parseGo(br, m, r)
	case bytes.HasPrefix(head, []byte("<")):
		return parseCobertura(br, m, r)
	case bytes.HasPrefix(head, []byte("TN:")), bytes.HasPrefix(head, []byte("SF:")):
		return parseLCOV(br, m, r)
	case len(head) == 0:
		return errors.New("is empty")
	}
	return errors.New("is not a Go cover profile, an LCOV tracefile or Cobertura XML")
}

// regular refuses what is not a regular file of a readable size.
func regular(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return errors.New("is a symbolic link; runr reads only regular files as profiles")
	case !fi.Mode().IsRegular():
		return errors.New("is not a regular file")
	case fi.Size() > MaxProfileBytes:
		return fmt.Errorf("is %d MiB, larger than the %d MiB runr reads of a profile", fi.Size()>>20, MaxProfileBytes>>20)
	}
	return nil
}

// lineScanner reads lines of at most maxLine bytes.
func lineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return sc
}

// scanErr words a scanner's failure.
func scanErr(err error, format string) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("has a line longer than %d KiB: not a %s runr can read", maxLine>>10, format)
	}
	return err
}

// parseGo reads a Go cover profile: "file:startLine.col,endLine.col
// statements count" after a "mode:" line. A line counts as run when a
// block with a count above 0 covers it.
func parseGo(rd io.Reader, m *matcher, r *Report) error {
	sc := lineScanner(rd)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if n == 1 || line == "" {
			continue
		}
		colon := strings.LastIndexByte(line, ':')
		if colon < 0 {
			return fmt.Errorf("line %d is not a Go cover profile block", n)
		}
		f := strings.Fields(line[colon+1:])
		if len(f) != 3 {
			return fmt.Errorf("line %d is not a Go cover profile block", n)
		}
		from, to, ok := strings.Cut(f[0], ",")
		start, err1 := blockLine(from)
		end, err2 := blockLine(to)
		count, err3 := strconv.ParseInt(f[2], 10, 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil || end < start {
			return fmt.Errorf("line %d is not a Go cover profile block", n)
		}
		if rel, ok := m.match(line[:colon], nil, r); ok {
			m.marks(r, rel).mark(start, end, count > 0)
		}
	}
	return scanErr(sc.Err(), "Go cover profile")
}

// blockLine is the line of a "line.column" position.
func blockLine(pos string) (int, error) {
	l, _, _ := strings.Cut(pos, ".")
	n, err := strconv.Atoi(l)
	if err == nil && n < 0 {
		err = errors.New("negative line")
	}
	return n, err
}

// parseLCOV reads an LCOV tracefile: SF: names the file, DA:line,hits its
// executable lines, end_of_record ends it.
func parseLCOV(rd io.Reader, m *matcher, r *Report) error {
	sc := lineScanner(rd)
	var cur *fileMarks
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		switch {
		case bytes.HasPrefix(line, []byte("SF:")):
			cur = nil
			if rel, ok := m.match(string(line[3:]), nil, r); ok {
				cur = m.marks(r, rel)
			}
		case bytes.HasPrefix(line, []byte("DA:")):
			// Only a changed file's lines are read: the rest of a large
			// profile costs a scan, not a parse.
			if cur == nil {
				continue
			}
			num, rest, found := bytes.Cut(line[3:], []byte(","))
			hits, _, _ := bytes.Cut(rest, []byte(","))
			ln, err1 := strconv.Atoi(string(num))
			h, err2 := strconv.ParseFloat(string(hits), 64)
			if !found || err1 != nil || err2 != nil {
				return fmt.Errorf("line %d: DA needs a line and a count", n)
			}
			cur.mark(ln, ln, h > 0)
		case string(line) == "end_of_record":
			cur = nil
		}
	}
	return scanErr(sc.Err(), "LCOV tracefile")
}

// parseCobertura reads Cobertura XML: <source> elements, <class
// filename=...> and its <line number= hits=>.
func parseCobertura(rd io.Reader, m *matcher, r *Report) error {
	dec := xml.NewDecoder(&tagGuard{r: rd})
	var sources []string
	inSource := false
	var source strings.Builder
	var cur *fileMarks
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("is not well-formed Cobertura XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "source":
				inSource = true
				source.Reset()
			case "class":
				cur = nil
				if rel, ok := m.match(attr(t, "filename"), sources, r); ok {
					cur = m.marks(r, rel)
				}
			case "line":
				ln, err1 := strconv.Atoi(attr(t, "number"))
				hits, err2 := strconv.ParseFloat(attr(t, "hits"), 64)
				if err1 != nil || err2 != nil {
					return errors.New("has a <line> without a number and hits")
				}
				if cur != nil {
					cur.mark(ln, ln, hits > 0)
				}
			}
		case xml.CharData:
			if inSource && source.Len() < 4096 {
				source.Write(t)
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "source":
				inSource = false
				if s := strings.TrimSpace(source.String()); s != "" && len(sources) < maxSources {
					sources = append(sources, s)
				}
			case "class":
				cur = nil
			}
		}
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// tagGuard fails a read once more than maxLine bytes pass without a tag
// delimiter, so no single XML token can hold runr's memory.
type tagGuard struct {
	r     io.Reader
	since int
}

func (g *tagGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	for _, b := range p[:n] {
		if b == '<' || b == '>' {
			g.since = 0
		} else if g.since++; g.since > maxLine {
			return 0, fmt.Errorf("more than %d KiB without a tag", maxLine>>10)
		}
	}
	return n, err
}

// matcher maps the names a profile uses to the changed files.
type matcher struct {
	tops    []string // the work tree's absolute path, and its path with links resolved
	changed map[string][]int
	outside int
}

func newMatcher(top string, changed Changed) *matcher {
	m := &matcher{changed: map[string][]int{}}
	for _, t := range []string{top, resolved(top)} {
		if t != "" && !slices.Contains(m.tops, t) {
			m.tops = append(m.tops, filepath.ToSlash(t))
		}
	}
	for f, lines := range changed {
		ns := make([]int, 0, len(lines))
		for _, l := range lines {
			ns = append(ns, l.N)
		}
		sort.Ints(ns)
		m.changed[f] = ns
	}
	return m
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// match maps a file name from a profile to a changed file: an absolute
// name inside the work tree by its path there, a relative one by being
// that path or ending with it (Go names files by import path; Cobertura
// relative to its sources). A name outside the work tree is counted and
// left out. It records the languages the profiles cover.
func (m *matcher) match(name string, sources []string, r *Report) (string, bool) {
	name = strings.TrimSpace(filepath.ToSlash(name))
	if name == "" {
		return "", false
	}
	var cands []string
	if path.IsAbs(name) {
		cands = append(cands, name)
	} else {
		for _, s := range sources {
			if s = filepath.ToSlash(s); path.IsAbs(s) {
				cands = append(cands, path.Join(s, name))
			}
		}
		if c := path.Clean(name); c != ".." && !strings.HasPrefix(c, "../") {
			cands = append(cands, c)
		}
	}
	inside := false
	for _, c := range cands {
		rel, ok := m.rel(c)
		if !ok {
			continue
		}
		inside = true
		if lang := language(rel); lang != "" {
			r.langs[lang] = true
		}
		if _, ok := m.changed[rel]; ok {
			return rel, true
		}
		if path.IsAbs(c) {
			continue
		}
		// The longest changed path the name ends with.
		best := ""
		for f := range m.changed {
			if strings.HasSuffix(rel, "/"+f) && len(f) > len(best) {
				best = f
			}
		}
		if best != "" {
			return best, true
		}
	}
	if !inside {
		m.outside++
	}
	return "", false
}

// rel is an absolute name relative to the work tree, or a relative name as
// it is; false for an absolute name outside the work tree.
func (m *matcher) rel(name string) (string, bool) {
	if !path.IsAbs(name) {
		return name, true
	}
	name = path.Clean(name)
	for _, t := range m.tops {
		if rest, ok := strings.CutPrefix(name, strings.TrimSuffix(t, "/")+"/"); ok {
			return rest, true
		}
	}
	return "", false
}

// fileMarks are a changed file's lines, in order, and what the profiles
// said of them so far.
type fileMarks struct {
	lines []int
	seen  map[int]bool
}

// marks are the marks of changed file rel, which a profile names: the file
// counts as named from now on, even if no line of it is marked.
func (m *matcher) marks(r *Report, rel string) *fileMarks {
	seen := r.lines[rel]
	if seen == nil {
		seen = map[int]bool{}
		r.lines[rel] = seen
	}
	return &fileMarks{lines: m.changed[rel], seen: seen}
}

// mark records that lines from..to are executable, and run when ran; only
// the changed lines among them are kept.
func (f *fileMarks) mark(from, to int, ran bool) {
	for i := sort.SearchInts(f.lines, from); i < len(f.lines) && f.lines[i] <= to; i++ {
		if !f.seen[f.lines[i]] {
			f.seen[f.lines[i]] = ran
		}
	}
}
