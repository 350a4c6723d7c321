package worker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"empty", 4, nil, ""},
		{"under", 4, []string{"ab"}, "ab"},
		{"exact", 4, []string{"abcd"}, "abcd"},
		{"wraps", 4, []string{"abc", "de"}, "bcde"},
		{"wraps twice", 4, []string{"abc", "def", "gh"}, "efgh"},
		{"one large write", 4, []string{"a", "0123456789"}, "6789"},
		{"large then small", 4, []string{"0123456789", "x"}, "789x"},
		{"many small", 3, strings.Split("abcdefg", ""), "efg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ring{buf: make([]byte, tt.size)}
			for _, w := range tt.writes {
				r.write([]byte(w))
			}
			assert.Equal(t, tt.want, string(r.bytes()))
		})
	}
}

func TestLineSplitter(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		chunks []string
		want   []string
	}{
		{"one line", 10, []string{"abc\n"}, []string{"abc"}},
		{"split across chunks", 10, []string{"ab", "c\nde", "f\n"}, []string{"abc", "def"}},
		{"empty lines", 10, []string{"\n\na\n"}, []string{"", "", "a"}},
		{"final line without newline", 10, []string{"a\nb"}, []string{"a", "b"}},
		{"truncated", 3, []string{"abcdef\ngh", "ijk\n"}, []string{"abc", "ghi"}},
		{"carriage return kept", 10, []string{"a\r\n"}, []string{"a\r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			l := &lineSplitter{max: tt.max, emit: func(b []byte) bool { got = append(got, string(b)); return true }, abort: func() {}}
			for _, c := range tt.chunks {
				l.feed([]byte(c))
			}
			if l.pending {
				l.flush()
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		lines int
		want  string
	}{
		{"last two", "a\nb\nc\n", 2, "b\nc"},
		{"last one", "a\nb\nc", 1, "c"},
		{"more than there are", "a\nb\n", 5, "a\nb"},
		{"zero", "a\nb\n", 0, ""},
		{"empty", "", 3, ""},
		{"crlf", "a\r\nb\r\n", 1, "b"},
		{"cut mid-character", "\xa9 caf\xc3\xa9\n", 1, "\uFFFD café"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Tail([]byte(tt.in), tt.lines))
		})
	}
}
