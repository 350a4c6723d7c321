package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A step is one line of a script: the calls it applies to and its actions.
type step struct {
	where     string // "script FILE line N", for messages
	selectors []selector
	actions   []action
}

// A call is what the selectors of a step are matched against.
type call struct {
	iteration, milestone, number int
}

// applies reports whether every selector of the step matches c; a step
// without selectors applies to every call.
func (s step) applies(c call) bool {
	for _, sel := range s.selectors {
		if !sel.matches(c) {
			return false
		}
	}
	return true
}

// A selector limits a step to a range of iterations (@), milestones (m) or
// calls of this program (#). hi < 0 means no upper bound.
type selector struct {
	kind   byte
	lo, hi int
}

func (s selector) matches(c call) bool {
	v := c.number
	switch s.kind {
	case '@':
		v = c.iteration
	case 'm':
		v = c.milestone
	}
	return v >= s.lo && (s.hi < 0 || v <= s.hi)
}

// parseSelector reads @N, @N-M, @N+ and the same with m or #; ok is false when
// word is not a selector at all.
func parseSelector(word string) (sel selector, ok bool) {
	if len(word) < 2 || !strings.ContainsRune("@m#", rune(word[0])) {
		return selector{}, false
	}
	sel.kind = word[0]
	r := word[1:]
	var err error
	switch {
	case strings.HasSuffix(r, "+"):
		sel.lo, err = strconv.Atoi(r[:len(r)-1])
		sel.hi = -1
	case strings.Contains(r, "-"):
		lo, hi, _ := strings.Cut(r, "-")
		sel.lo, err = strconv.Atoi(lo)
		if err == nil {
			sel.hi, err = strconv.Atoi(hi)
		}
	default:
		sel.lo, err = strconv.Atoi(r)
		sel.hi = sel.lo
	}
	if err != nil || sel.lo < 0 || (sel.hi >= 0 && sel.hi < sel.lo) {
		return selector{}, false
	}
	return sel, true
}

// An action is one parsed command with its arguments, escapes already decoded.
type action struct {
	name string
	args []string
}

// An actionSpec says how many arguments an action takes; with rest, the last
// argument is the remainder of the line, spaces included.
type actionSpec struct {
	min, max int
	rest     bool
	check    func(args []string) error
}

var actionSpecs = map[string]actionSpec{
	"write":       {min: 1, max: 2, rest: true},
	"append":      {min: 1, max: 2, rest: true},
	"delete":      {min: 1, max: 1},
	"rename":      {min: 2, max: 2},
	"print":       {min: 0, max: 1, rest: true},
	"eprint":      {min: 0, max: 1, rest: true},
	"status":      {min: 1, max: 2, rest: true, check: checkStatus},
	"promise":     {},
	"exit":        {min: 1, max: 1, check: checkExit},
	"sleep":       {min: 1, max: 1, check: checkDuration},
	"hang":        {},
	"spin":        {min: 1, max: 1, check: checkDuration},
	"trickle":     {min: 2, max: 2, check: func(a []string) error { return checkDuration(a[1:]) }},
	"ignore-term": {},
	"grandchild":  {min: 0, max: 1, check: checkDuration},
	"background":  {min: 0, max: 1, check: checkDuration},
	"flood":       {min: 1, max: 1, check: checkSize},
	"flood-lines": {min: 1, max: 1, check: checkCount},
	"ready":       {},
	"wait-for":    {min: 1, max: 1},
	"echo-prompt": {},
	"env":         {},
	"fix-test":    {min: 0, max: 1, check: checkCount},
	"touch-count": {min: 1, max: 1},
	"json":        {min: 1, max: 1},
	"usage":       {min: 2, max: 4, check: checkUsage},
}

// checkUsage takes IN OUT [COST [MODEL]]: two counts and a cost in USD.
func checkUsage(args []string) error {
	for _, a := range args[:2] {
		if n, err := strconv.ParseInt(a, 10, 64); err != nil || n < 0 {
			return fmt.Errorf("usage IN OUT [COST [MODEL]]: %q is not a token count", a)
		}
	}
	if len(args) > 2 {
		if c, err := strconv.ParseFloat(args[2], 64); err != nil || c < 0 {
			return fmt.Errorf("usage IN OUT [COST [MODEL]]: %q is not a cost in USD", args[2])
		}
	}
	return nil
}

func checkStatus(args []string) error {
	switch {
	case args[0] == "blocked" && len(args) == 2:
		return nil
	case args[0] == "blocked":
		return fmt.Errorf("status blocked needs a reason: status blocked WHY")
	case (args[0] == "done" || args[0] == "failed") && len(args) == 1:
		return nil
	}
	return fmt.Errorf("status takes done, failed or blocked WHY, not %q", strings.Join(args, " "))
}

func checkExit(args []string) error {
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 || n > 255 {
		return fmt.Errorf("exit takes a code from 0 to 255, not %q", args[0])
	}
	return nil
}

func checkDuration(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if d, err := time.ParseDuration(args[0]); err != nil || d < 0 {
		return fmt.Errorf("%q is not a duration such as 500ms, 30s or 2m", args[0])
	}
	return nil
}

func checkSize(args []string) error {
	_, err := parseSize(args[0])
	return err
}

func checkCount(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if n, err := strconv.Atoi(args[0]); err != nil || n < 0 {
		return fmt.Errorf("%q is not a count", args[0])
	}
	return nil
}

// parseSize reads a byte count such as 4096, 64K, 10M or 1G (powers of 1024;
// a trailing B or iB is allowed).
func parseSize(s string) (int64, error) {
	num := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(s), "B"), "I")
	mult := int64(1)
	if num != "" {
		switch num[len(num)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			num = num[:len(num)-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size such as 4096, 64K, 10M or 1G", s)
	}
	return n * mult, nil
}

// parseScript parses a whole script; name says where it came from in messages.
// Blank lines and lines starting with "# " or "//" are comments.
func parseScript(name, text string) ([]step, error) {
	var steps []step
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "#" || strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "//") {
			continue
		}
		where := fmt.Sprintf("%s line %d", name, i+1)
		s, err := parseStep(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		s.where = where
		steps = append(steps, s)
	}
	return steps, nil
}

// parseStep parses "[SELECTORS:] ACTION [; ACTION]...". The text before the
// first colon is taken as selectors only when every word of it is one, so a
// colon inside an action's text needs no escape.
func parseStep(line string) (step, error) {
	var s step
	if head, tail, found := strings.Cut(line, ":"); found {
		var sels []selector
		for _, w := range strings.Fields(head) {
			sel, ok := parseSelector(w)
			if !ok {
				sels = nil
				break
			}
			sels = append(sels, sel)
		}
		if sels != nil {
			s.selectors, line = sels, tail
		}
	}
	for _, part := range splitActions(line) {
		a, err := parseAction(part)
		if err != nil {
			return step{}, err
		}
		s.actions = append(s.actions, a)
	}
	if len(s.actions) == 0 {
		return step{}, fmt.Errorf("no action in %q", line)
	}
	return s, nil
}

// splitActions splits at every ";" not escaped as "\;", keeping the escapes
// for unescape.
func splitActions(line string) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i])
			cur.WriteByte(line[i+1])
			i++
		case line[i] == ';':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	parts = append(parts, cur.String())
	var nonEmpty []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	return nonEmpty
}

func parseAction(text string) (action, error) {
	name, rest, _ := strings.Cut(text, " ")
	spec, ok := actionSpecs[name]
	if _, isSel := parseSelector(strings.TrimSuffix(name, ":")); !ok && isSel {
		return action{}, fmt.Errorf("selectors go at the start of a step, not after \";\" (%q): start a new line or pass another --do", text)
	}
	if !ok {
		return action{}, fmt.Errorf("unknown action %q (run fakeagent -h for the list)", name)
	}
	rest = strings.TrimSpace(rest)
	var args []string
	for rest != "" && len(args) < spec.max {
		if spec.rest && len(args) == spec.max-1 {
			args = append(args, rest)
			rest = ""
			break
		}
		word, more, _ := strings.Cut(rest, " ")
		args = append(args, word)
		rest = strings.TrimSpace(more)
	}
	if rest != "" || len(args) < spec.min {
		return action{}, fmt.Errorf("%s takes %s, got %q", name, arity(spec), text)
	}
	for i := range args {
		args[i] = unescape(args[i])
	}
	if spec.check != nil {
		if err := spec.check(args); err != nil {
			return action{}, err
		}
	}
	return action{name: name, args: args}, nil
}

func arity(s actionSpec) string {
	if s.min == s.max {
		return fmt.Sprintf("%d argument(s)", s.min)
	}
	return fmt.Sprintf("%d to %d argument(s)", s.min, s.max)
}

// unescape decodes \n, \t, \; and \\; any other backslash stays as it is.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case ';', '\\':
			b.WriteByte(s[i+1])
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i+1])
		}
		i++
	}
	return b.String()
}
