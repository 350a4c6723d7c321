package doctor

import (
	"bytes"
	"encoding/json"
	"math"
)

// eventHead is the part of a timeline event doctor needs. typ and ts are
// the raw contents of their JSON strings and may point into the line.
type eventHead struct {
	seq  int64
	tick int
	typ  []byte
	ts   []byte
}

// parseEventHead reads the top-level fields seq, ts, type and tick of one
// timeline line and skips the rest (phase, data) without decoding it. ok is
// false when the line is not one JSON object or one of those fields has the
// wrong type: a line cut short by a crash never passes, because its closing
// brace is missing. Nested values are checked for balance, not for full JSON
// grammar; that is enough to tell a whole event from a damaged one.
func parseEventHead(line []byte) (ev eventHead, ok bool) {
	p := parser{b: line}
	if !p.byte('{') {
		return ev, false
	}
	if p.byte('}') {
		return ev, p.end()
	}
	for {
		key, _, ok := p.str()
		if !ok || !p.byte(':') {
			return ev, false
		}
		p.ws()
		switch string(key) {
		case "seq":
			if ev.seq, ok = p.int(); !ok {
				return ev, false
			}
		case "tick":
			n, ok := p.int()
			if !ok || int64(int(n)) != n {
				return ev, false
			}
			ev.tick = int(n)
		case "type":
			if ev.typ, ok = p.strOrNull(); !ok {
				return ev, false
			}
		case "ts":
			if ev.ts, ok = p.strOrNull(); !ok {
				return ev, false
			}
		default:
			if !p.skip() {
				return ev, false
			}
		}
		if p.byte(',') {
			continue
		}
		if p.byte('}') {
			return ev, p.end()
		}
		return ev, false
	}
}

// parser is a cursor over one line of JSON.
type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c, after any white space, if it comes next.
func (p *parser) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether nothing but white space is left.
func (p *parser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// str reads a JSON string and returns its contents as written; escaped
// tells whether they hold escapes that need decoding.
func (p *parser) str() (raw []byte, escaped, ok bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, false
	}
	start := p.i + 1
	for j := start; ; {
		k := bytes.IndexByte(p.b[j:], '"')
		if k < 0 {
			return nil, false, false
		}
		j += k
		// The quote ends the string unless an odd number of backslashes
		// escape it.
		bs := 0
		for bs < j-start && p.b[j-1-bs] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			p.i = j + 1
			raw = p.b[start:j]
			return raw, bytes.IndexByte(raw, '\\') >= 0, true
		}
		j++
	}
}

// strOrNull reads a string value (null is the empty string), decoding
// escapes only when there are any.
func (p *parser) strOrNull() ([]byte, bool) {
	if p.literal("null") {
		return nil, true
	}
	start := p.i
	raw, escaped, ok := p.str()
	if !ok || !escaped {
		return raw, ok
	}
	var s string
	if json.Unmarshal(p.b[start:p.i], &s) != nil {
		return nil, false
	}
	return []byte(s), true
}

// int reads an integer value as encoding/json would into an int64 (no
// fraction, no exponent, no overflow); null leaves it zero.
func (p *parser) int() (int64, bool) {
	if p.literal("null") {
		return 0, true
	}
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	var n uint64
	for ; p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9'; p.i++ {
		if n > (math.MaxUint64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(p.b[p.i]-'0')
	}
	switch {
	case p.i == start, p.i < len(p.b) && !isDelimiter(p.b[p.i]):
		return 0, false
	case neg && n <= 1<<63:
		return -int64(n), true
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}

func (p *parser) literal(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// skip passes over one value of any kind. Objects and arrays are skipped
// by counting brackets outside strings.
func (p *parser) skip() bool {
	p.ws()
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, _, ok := p.str()
		return ok
	case c == '{' || c == '[':
		depth := 0
		for {
			for p.i < len(p.b) && !structural[p.b[p.i]] {
				p.i++
			}
			if p.i == len(p.b) {
				return false
			}
			switch p.b[p.i] {
			case '"':
				if _, _, ok := p.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			p.i++
			if depth == 0 {
				return true
			}
		}
	default:
		start := p.i
		for p.i < len(p.b) && !isDelimiter(p.b[p.i]) {
			p.i++
		}
		return p.i > start
	}
}

// structural marks the bytes that matter when skipping a nested value.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
