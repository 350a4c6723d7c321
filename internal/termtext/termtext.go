// Package termtext makes text that came from an agent, a log or a file safe to
// print on a terminal: control characters are shown, never obeyed.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Visible returns text that came from an agent or a log with its control
// characters made visible, so that printing it cannot move the cursor,
// retitle the terminal, clear the screen or hide what came before: ESC
// shows as \x1b, a C1 control as \u009b, a byte that is not UTF-8 as \xff.
// Newlines and tabs stay, as the text's line structure; a carriage return
// before a newline is dropped, elsewhere it shows as \r. Text without such
// characters is returned as it is.
func Visible(s string) string { return visible(s, false) }

// VisibleLine is Visible for text that must stay on one line (a live line,
// a table cell): newlines show as \n too.
func VisibleLine(s string) string { return visible(s, true) }

func visible(s string, oneLine bool) string {
	if !needsEscape(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && oneLine:
			b.WriteString(`\n`)
		case r == '\n', r == '\t':
			b.WriteRune(r)
		case r == '\r' && !oneLine && strings.HasPrefix(s[i+n:], "\n"):
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case isHidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string, oneLine bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1, isHidden(r):
			return true
		case r == '\n' || r == '\t':
			if oneLine {
				return true
			}
		case r < 0x20 || r == 0x7f:
			return true
		}
		i += n
	}
	return false
}

// isHidden reports the characters beyond ASCII that a terminal acts on
// instead of showing: the C1 controls (U+009B is CSI) and the bidirectional
// overrides and isolates that reorder what is displayed.
func isHidden(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// VisibleJSON escapes, in encoded JSON, the characters that encoding/json
// leaves raw but a terminal acts on (DEL, the C1 controls, the bidi
// overrides), so that cat on a JSON file prints no control character. The
// JSON decodes to the same values: outside strings JSON has none of them.
func VisibleJSON(b []byte) []byte {
	if !needsEscape(string(b), false) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == 0x7f || isHidden(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
