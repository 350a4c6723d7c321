package doctor

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestParseEventHead(t *testing.T) {
	tests := []struct {
		name string
		line string
		ok   bool
		want eventHead
	}{
		{name: "as the store writes it", ok: true,
			line: `{"seq":7,"ts":"2026-11-21T23:00:17.5Z","type":"phase_ended","tick":3,"phase":"verify","data":{"exit_code":1,"command":"go test ./..."}}`,
			want: eventHead{seq: 7, tick: 3, typ: []byte("phase_ended"), ts: []byte("2026-11-21T23:00:17.5Z")}},
		{name: "any key order, white space", ok: true,
			line: ` { "data" : [1, {"a": "}"}] , "tick" : 12 , "type" : "x" , "seq" : 9 } `,
			want: eventHead{seq: 9, tick: 12, typ: []byte("x")}},
		{name: "braces and quotes inside data strings", ok: true,
			line: `{"seq":1,"data":{"out":"a \"}{\" b\\","n":null},"type":"t"}`,
			want: eventHead{seq: 1, typ: []byte("t")}},
		{name: "escaped type is decoded", ok: true,
			line: `{"seq":2,"type":"a\u0062c\n"}`,
			want: eventHead{seq: 2, typ: []byte("abc\n")}},
		{name: "null fields stay zero", ok: true,
			line: `{"seq":null,"tick":null,"type":null,"ts":null}`},
		{name: "empty object", ok: true, line: `{}`},
		{name: "negative tick", ok: true, line: `{"tick":-4}`, want: eventHead{tick: -4}},
		{name: "later duplicate key wins", ok: true, line: `{"seq":1,"seq":2}`, want: eventHead{seq: 2}},

		{name: "cut short inside data", line: `{"seq":7,"ts":"2026-11-21T23:00:17Z","type":"phase_ended","tick":3,"data":{"exit_co`},
		{name: "cut short inside a string", line: `{"seq":7,"type":"phase_en`},
		{name: "cut short after a comma", line: `{"seq":7,`},
		{name: "missing closing brace", line: `{"seq":7}x`},
		{name: "not an object", line: `[1,2,3]`},
		{name: "garbage", line: `hello world`},
		{name: "empty", line: ``},
		{name: "seq is a string", line: `{"seq":"7"}`},
		{name: "tick has a fraction", line: `{"tick":1.5}`},
		{name: "seq overflows", line: `{"seq":99999999999999999999}`},
		{name: "type is a number", line: `{"type":3}`},
		{name: "key without value", line: `{"seq":}`},
		{name: "unbalanced data", line: `{"data":{"a":[1,2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseEventHead([]byte(tt.line))
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, tt.want.seq, got.seq)
				assert.Equal(t, tt.want.tick, got.tick)
				assert.Equal(t, string(tt.want.typ), string(got.typ))
				assert.Equal(t, string(tt.want.ts), string(got.ts))
			}
		})
	}
}

// FuzzParseEventHead checks the fast reader against encoding/json: every
// line encoding/json decodes as an event, parseEventHead reads the same.
func FuzzParseEventHead(f *testing.F) {
	for _, s := range []string{
		`{"seq":7,"ts":"2026-11-21T23:00:17Z","type":"phase_ended","tick":3,"phase":"verify","data":{"a":[1,"]"]}}`,
		`{"type":"a\"b","seq":-1}`,
		`{"seq":7,"type":"x`,
		`{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var ev struct {
			Seq  int64  `json:"seq"`
			TS   string `json:"ts"`
			Type string `json:"type"`
			Tick int    `json:"tick"`
		}
		// Keys match case-insensitively in encoding/json and exactly
		// here; the store writes them in lower case.
		// encoding/json also replaces invalid UTF-8, which the store
		// never writes.
		if !utf8.ValidString(line) || json.Unmarshal([]byte(line), &ev) != nil || caseVariantKeys(line) {
			return
		}
		got, ok := parseEventHead([]byte(line))
		if !ok {
			t.Fatalf("encoding/json reads %q, parseEventHead does not", line)
		}
		if got.seq != ev.Seq || got.tick != ev.Tick || string(got.typ) != ev.Type {
			t.Fatalf("%q: got seq %d tick %d type %q, want %d %d %q", line, got.seq, got.tick, got.typ, ev.Seq, ev.Tick, ev.Type)
		}
	})
}

// caseVariantKeys reports whether a top-level key spells one of the event's
// fields in another case ("SEQ"), which encoding/json would accept.
func caseVariantKeys(line string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil {
		return true
	}
	for k := range m {
		switch k {
		case "seq", "ts", "type", "tick":
			continue
		}
		for _, f := range []string{"seq", "ts", "type", "tick"} {
			if strings.EqualFold(k, f) {
				return true
			}
		}
	}
	return false
}
