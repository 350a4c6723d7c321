package stopreasons

// The figures of runr's texts, counts and durations, written one way
// wherever they appear: the registry's diagnoses, the stop rules'
// messages, the live line, status, watch, doctor and the report. They live
// in the floor, beside the registry that counts and times things, so that
// the pure evaluator can use them too.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a duration for a person, rounded to the second and written
// the way a user writes one in runr.yaml or a flag: 45s, 12m5s, 30m,
// 1h30m. Every view of a run (the live line, status, watch, doctor, the
// report) writes durations this one way, so a figure reads the same
// wherever it appears and can be given back as a flag (--time 30m).
func Duration(d time.Duration) string {
	return TrimDuration(max(d, 0).Round(time.Second))
}

// TrimDuration writes d as time.Duration does, without the zero units a person
// leaves out: 30m, not 30m0s; 1h, not 1h0m0s.
func TrimDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Took is how long a step took, for a person: milliseconds under a second,
// tenths under a minute, else as Duration.
func Took(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(max(d, 0).Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return Duration(d)
}

// Count is n things: one when n is 1, else many ("1 agent call in a row
// that changed nothing", "3 agent calls in a row that changed nothing").
func Count(n int, one, many string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Plural is n things: "1 tick", "3 ticks", "2 retries", "4 failed
// attempts". noun is the singular of a regular noun, alone or last in its
// phrase; Count takes any other.
func Plural(n int, noun string) string {
	head, last := "", noun
	if i := strings.LastIndexByte(noun, ' '); i >= 0 {
		head, last = noun[:i+1], noun[i+1:]
	}
	switch {
	case strings.HasSuffix(last, "y") && !strings.HasSuffix(last, "ay") && !strings.HasSuffix(last, "ey") && !strings.HasSuffix(last, "oy"):
		last = strings.TrimSuffix(last, "y") + "ies"
	case strings.HasSuffix(last, "s"), strings.HasSuffix(last, "x"), strings.HasSuffix(last, "ch"), strings.HasSuffix(last, "sh"):
		last += "es"
	default:
		last += "s"
	}
	return Count(n, noun, head+last)
}
