package agents

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// ActivityKind says what an Activity is.
type ActivityKind string

// Activity kinds. Output is a command agent's latest output line: it is
// shown live but, as its lines stay in the tick's log, never recorded as an
// event of the run.
const (
	ActivityTool      ActivityKind = "tool"       // a tool call: Tool and its argument summary
	ActivityToolError ActivityKind = "tool_error" // a tool call that failed: Tool and the first line of its error
	ActivityMessage   ActivityKind = "message"    // a short message of the assistant (its first line)
	ActivityOutput    ActivityKind = "output"     // a command agent's latest output line
)

// maxActivityText bounds an Activity's text: it is one line on a terminal.
const maxActivityText = 200

// Activity is one thing the agent did that a person watching the run wants
// to see: `Bash go test ./...`, `Edit internal/x.go`, a failed tool, a
// short message. Its text is the agent's, unescaped: whoever prints it makes
// its control characters visible.
type Activity struct {
	Kind ActivityKind `json:"kind"`
	Tool string       `json:"tool,omitempty"`
	Text string       `json:"text"`
}

// ActivityReader turns an agent's output lines into activities as they
// stream. It keeps a little state (a tool call's name until its result, an
// assistant message that comes in pieces), bounded whatever the agent prints.
type ActivityReader interface {
	// Line returns the activities a line of stdout completes.
	Line(line []byte) []Activity
	// Flush returns what the end of the output completes.
	Flush() []Activity
}

// EventReader returns the reader of an agent kind's stream of events, paths
// under dir shown relative to it; nil when the kind's output is plain text
// (or the kind is unknown).
func EventReader(kind, dir string) ActivityReader {
	if a, ok := lookup(kind); ok {
		return a.NewActivityReader(dir)
	}
	return nil
}

// NewActivityReader returns the reader of an agent kind's output: its
// stream of events (EventReader), else its latest output line.
func NewActivityReader(kind, dir string) ActivityReader {
	if r := EventReader(kind, dir); r != nil {
		return r
	}
	return lineActivity{}
}

// maxOpenTools bounds the tool calls remembered until their results.
const maxOpenTools = 256

type activityBase struct {
	dir   string
	tools map[string]string // tool call id → tool name, until its result
}

func newActivityBase(dir string) activityBase {
	return activityBase{dir: dir, tools: map[string]string{}}
}

func (b *activityBase) open(id, tool string) {
	if id == "" {
		return
	}
	if len(b.tools) >= maxOpenTools {
		clear(b.tools)
	}
	b.tools[id] = tool
}

func (b *activityBase) closeTool(id string) string {
	name := b.tools[id]
	delete(b.tools, id)
	return name
}

// rel shows a path under the work dir relative to it.
func (b *activityBase) rel(p string) string {
	if b.dir != "" && filepath.IsAbs(p) {
		if r, err := filepath.Rel(b.dir, p); err == nil && filepath.IsLocal(r) {
			return r
		}
	}
	return p
}

// summary is a tool call's argument in a few words: the command of a shell,
// the file of an edit or a read, the pattern of a search, else the first
// text argument.
func (b *activityBase) summary(input map[string]any) string {
	for _, k := range []string{"command", "cmd", "file_path", "filePath", "absolute_path", "notebook_path", "path", "pattern", "url", "query", "description", "prompt"} {
		switch v := input[k].(type) {
		case string:
			if strings.Contains(strings.ToLower(k), "path") { // opencode: filePath
				return b.rel(v)
			}
			return v
		case []any:
			if k == "command" { // codex and others pass argv
				parts := make([]string, 0, len(v))
				for _, a := range v {
					parts = append(parts, anyText(a))
				}
				return strings.Join(parts, " ")
			}
		}
	}
	keys := make([]string, 0, len(input))
	for k := range input {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s, ok := input[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func anyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// firstLine is the first non-blank line of s, cut to maxActivityText.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return cut(l)
		}
	}
	return ""
}

func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxActivityText {
		return s
	}
	r := []rune(s)
	return string(r[:maxActivityText-1]) + "…"
}

func tool(name, text string) Activity {
	return Activity{Kind: ActivityTool, Tool: cut(name), Text: firstLine(text)}
}

func toolError(name, text string) Activity {
	return Activity{Kind: ActivityToolError, Tool: cut(name), Text: firstLine(text)}
}

func message(text string) []Activity {
	if l := firstLine(text); l != "" {
		return []Activity{{Kind: ActivityMessage, Text: l}}
	}
	return nil
}

// lineActivity shows the latest non-blank output line.
type lineActivity struct{}

func (lineActivity) Line(line []byte) []Activity {
	if len(line) > 4*maxActivityText {
		line = line[:4*maxActivityText]
	}
	if l := firstLine(strings.ToValidUTF8(string(line), "\uFFFD")); l != "" {
		return []Activity{{Kind: ActivityOutput, Text: l}}
	}
	return nil
}

func (lineActivity) Flush() []Activity { return nil }

// jsonLine is a cheap test that a line may be an event of one of the types
// an activity reader looks at, before it is decoded.
func jsonLine(line []byte, typ string) bool {
	return bytes.Contains(line, []byte(`"`+typ+`"`))
}
