package guard

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Line is one added or modified line of a file: its number in the file as
// it is now and its text, cut to maxLineText bytes.
type Line struct {
	N    int
	Text string
}

// Limits of AddedLines: the diff it reads is the agent's work, of any size.
const (
	maxDiffBytes = 32 << 20
	maxLineText  = 256
)

// AddedLines are the lines added or modified in the working tree at dir
// since the tree from (a tree or commit id; TreeHash gives one), by file
// relative to the repository root: tracked and untracked files alike,
// ignored ones not, binary files and deletions left out. A diff larger
// than 32 MiB is judged as far as it goes, and cut reports it.
func AddedLines(ctx context.Context, dir, from string) (lines map[string][]Line, cut bool, err error) {
	now, err := TreeHash(ctx, dir)
	if err != nil {
		return nil, false, err
	}
	top, err := TopLevel(ctx, dir)
	if err != nil {
		return nil, false, err
	}
	c := gitCmd{dir: top, maxOut: maxDiffBytes, args: []string{"-c", "core.quotePath=false", "diff-tree", "-r", "-p", "-U0",
		"--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--diff-filter=AM", from, now}}
	out, err := c.run(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("the lines changed since %s in %s: %w", short(from), top, err)
	}
	return parseAdded(out), len(out) >= maxDiffBytes, nil
}

// parseAdded reads a -U0 patch: "+++ b/path" names a file, "@@ -a,b +c,d
// @@" starts its added lines at c, and each "+" line is one of them.
func parseAdded(out []byte) map[string][]Line {
	lines := map[string][]Line{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), maxDiffBytes)
	file, next := "", 0
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "diff --git "):
			file, next = "", 0
		case strings.HasPrefix(l, "+++ "):
			file = patchPath(strings.TrimPrefix(l, "+++ "))
		case strings.HasPrefix(l, "@@ "):
			next = hunkStart(l)
		case strings.HasPrefix(l, "+") && file != "" && next > 0:
			text := l[1:]
			if len(text) > maxLineText {
				text = text[:maxLineText]
			}
			lines[file] = append(lines[file], Line{N: next, Text: text})
			next++
		}
	}
	return lines
}

// patchPath is the path of a "+++" line, "" for /dev/null; git quotes a
// name with unusual bytes C-style, and ends one with a space with a tab.
func patchPath(s string) string {
	s = strings.TrimSuffix(s, "\t")
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	rest, ok := strings.CutPrefix(s, "b/")
	if !ok {
		return ""
	}
	return rest
}

// hunkStart is the first new line of a hunk header "@@ -a,b +c,d @@".
func hunkStart(h string) int {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[2], "+") {
		return 0
	}
	start, count, _ := strings.Cut(f[2][1:], ",")
	n, err := strconv.Atoi(start)
	if err != nil || count == "0" {
		return 0
	}
	return n
}

// cappedBuffer keeps the first max bytes written to it and drops the
// rest, still reporting them written, so the writer (git) runs to its end.
type cappedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
