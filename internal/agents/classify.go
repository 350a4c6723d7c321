package agents

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // reset times name IANA zones ("resets 3pm (Europe/Berlin)"); do not depend on the host's zoneinfo
	"unicode/utf8"
)

// Error texts are matched in this order: an authentication failure is the
// most specific and needs a person, a limit resets by itself, a server error
// is worth another attempt. A bare number counts as an HTTP status only next
// to a word that says so, so "main.go:500" is no server error.
const statusCtx = `(?:status|error|http|code|rejected)\W{0,3}(?:code\W{0,3})?`

var (
	authText   = lazyRegexp(`(?i)` + statusCtx + `401\b|unauthori[sz]ed|unauthenticated|authentication|invalid[ _-]?(api[ _-]?key|x-api-key)|api key not valid|not logged in|please (run .*)?/?log ?in|login required|oauth token`)
	rateText   = lazyRegexp(`(?i)` + statusCtx + `429\b|\b429 too many|rate[ _-]?limit|usage limit|hit your limit|too many requests|quota|resource.{0,20}exhausted|limit reached|credit balance (?:is )?too low|insufficient[ _]quota`)
	serverText = lazyRegexp(`(?i)` + statusCtx + `(50[0-4]|529)\b|\b(50[0-4]|529)\s+(internal|service|bad|gateway|overloaded)|overloaded|internal server error|service unavailable|bad gateway|server[ _]error|serviceunavailable|internalservererror`)
)

// classifyText gives the class of an error message; ClassError when it says
// nothing more specific.
func classifyText(s string) Class {
	switch {
	case s == "":
		return ClassError
	case authText().MatchString(s):
		return ClassAuth
	case rateText().MatchString(s):
		return ClassRateLimit
	case serverText().MatchString(s):
		return ClassServer
	}
	return ClassError
}

// classifyStatus maps an HTTP status the CLI reported; "" when it says nothing.
func classifyStatus(status int) Class {
	switch {
	case status == 401 || status == 403:
		return ClassAuth
	case status == 429:
		return ClassRateLimit
	case status >= 500 && status <= 599:
		return ClassServer
	case status >= 400:
		return ClassError
	}
	return ClassNone
}

var (
	// "Claude AI usage limit reached|1763776800"
	resetEpochPipe = lazyRegexp(`(?i)limit reached\|(\d{9,11})`)
	// {"resets_at":1763776800} inside an error body
	resetEpochJSON = lazyRegexp(`"resets?_at"\s*:\s*(\d{9,11})`)
	// "resets 3pm (Europe/Berlin)", "resets at 15:30", "resets 3:05 PM"
	resetClock = lazyRegexp(`(?i)\bresets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?(?:\s*\(([A-Za-z_+\-/0-9]+)\))?`)
	// "try again in 2h 30m", "retry in 45 seconds"
	resetIn   = lazyRegexp(`(?i)\b(?:try again|retry|resets?)\s+in\s+((?:\d+\s*(?:hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)`)
	resetPart = lazyRegexp(`(?i)(\d+)\s*(hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
)

// parseResetAt finds when a limit resets in a CLI's message, relative to now
// for clock times and durations; zero when the message does not say.
func parseResetAt(s string, now time.Time) time.Time {
	if m := resetEpochPipe().FindStringSubmatch(s); m != nil {
		return epoch(m[1])
	}
	if m := resetEpochJSON().FindStringSubmatch(s); m != nil {
		return epoch(m[1])
	}
	if m := resetClock().FindStringSubmatch(s); m != nil && (m[2] != "" || m[3] != "") {
		if t, ok := nextClock(m[1], m[2], m[3], m[4], now); ok {
			return t
		}
	}
	if m := resetIn().FindStringSubmatch(s); m != nil {
		var d time.Duration
		for _, p := range resetPart().FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(p[1])
			switch strings.ToLower(p[2])[0] {
			case 'h':
				d += time.Duration(n) * time.Hour
			case 'm':
				d += time.Duration(n) * time.Minute
			case 's':
				d += time.Duration(n) * time.Second
			}
		}
		if d > 0 {
			return now.Add(d)
		}
	}
	return time.Time{}
}

func epoch(digits string) time.Time {
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(n, 0).UTC()
}

// nextClock is the first moment at or after now when the wall clock in zone
// shows hour:minute; the host's zone when the message names none or an
// unknown one.
func nextClock(hour, minute, ampm, zone string, now time.Time) (time.Time, bool) {
	h, _ := strconv.Atoi(hour)
	m := 0
	if minute != "" {
		m, _ = strconv.Atoi(minute)
	}
	if ampm != "" {
		if h < 1 || h > 12 {
			return time.Time{}, false
		}
		pm := strings.HasPrefix(strings.ToLower(ampm), "p")
		h %= 12
		if pm {
			h += 12
		}
	}
	if h > 23 || m > 59 {
		return time.Time{}, false
	}
	loc := now.Location()
	if zone != "" {
		if l, err := time.LoadLocation(zone); err == nil {
			loc = l
		}
	}
	local := now.In(loc)
	t := time.Date(local.Year(), local.Month(), local.Day(), h, m, 0, 0, loc)
	if t.Before(local) {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}

// decodeLine reads one JSON object line into v; noise, blank and truncated
// lines report false and are ignored by every parser.
func decodeLine(line []byte, v any) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	return json.Unmarshal(line, v) == nil
}

// lastBytes keeps the end of s, at most n bytes, cut on a rune boundary.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// lastLines keeps the last n non-blank lines of s, each at most 500 bytes.
func lastLines(s string, n int) string {
	var out []string
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if len(l) > 500 {
			l = lastBytes(l, 500)
		}
		out = append(out, l)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return strings.Join(out, "\n")
}

// plainTail is the last n lines of output that are not JSON events: what a
// CLI printed for people when it failed.
func plainTail(tail []byte, n int) string {
	var keep []string
	for _, l := range strings.Split(string(tail), "\n") {
		if t := strings.TrimSpace(l); t != "" && t[0] != '{' {
			keep = append(keep, t)
		}
	}
	return lastLines(strings.Join(keep, "\n"), n)
}

// tailBuffer keeps the last max bytes of the lines written to it: it grows
// up to max, then wraps around as a ring, so that every byte written costs one
// copy however long the stream.
type tailBuffer struct {
	max  int
	buf  []byte
	w    int  // once full: where the next byte goes, and where the oldest is
	full bool // buf holds max bytes and wraps
}

func (t *tailBuffer) writeLine(line []byte) {
	// Most lines fit, newline and all, before the ring's end.
	if t.full && len(line) < t.max-t.w {
		t.w += copy(t.buf[t.w:], line)
		t.buf[t.w] = '\n'
		if t.w++; t.w == t.max {
			t.w = 0
		}
		return
	}
	t.write(line)
	t.write(newline)
}

var newline = []byte{'\n'}

func (t *tailBuffer) write(p []byte) {
	if !t.full {
		if len(t.buf)+len(p) <= t.max {
			t.buf = append(t.buf, p...)
			return
		}
		n := t.max - len(t.buf)
		t.buf = append(t.buf, p[:n]...)
		p = p[n:]
		t.full = true
	}
	if len(p) >= t.max {
		copy(t.buf, p[len(p)-t.max:])
		t.w = 0
		return
	}
	n := copy(t.buf[t.w:], p)
	copy(t.buf, p[n:])
	if t.w += len(p); t.w >= t.max {
		t.w -= t.max
	}
}

// String is what was written, its last max bytes cut on a rune boundary.
func (t *tailBuffer) String() string {
	if !t.full {
		return string(t.buf)
	}
	out := make([]byte, 0, t.max)
	out = append(append(out, t.buf[t.w:]...), t.buf[:t.w]...)
	for len(out) > 0 && !utf8.RuneStart(out[0]) {
		out = out[1:]
	}
	return string(out)
}

// fail marks a result as an error of class c; a rate limit also gets the
// reset time its error text names.
func (r *Result) fail(c Class) {
	r.IsError = true
	r.Class = c
	if c == ClassRateLimit {
		r.ResetAt = parseResetAt(r.ErrorText, time.Now())
	}
}

// addTail appends the last lines of the call's output to the error text,
// where a CLI that ended without saying why usually printed something.
func (r *Result) addTail(tail []byte) {
	if t := plainTail(tail, 3); t != "" {
		r.ErrorText += ": " + t
	}
}

// lazyRegexp compiles pattern on its first use: runr starts for every
// command, and most never read an agent's output.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
