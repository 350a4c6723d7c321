package agents

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strconv"
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

// NewActivityReader returns the reader of an agent kind's stream; paths
// under dir are shown relative to it. A kind whose output is not a stream of
// events (aider, command) shows its latest output line.
func NewActivityReader(kind, dir string) ActivityReader {
	b := activityBase{dir: dir, tools: map[string]string{}}
	switch kind {
	case "claude", "qwen": // Qwen Code streams Claude Code's events
		return &claudeActivity{b}
	case "codex":
		return &codexActivity{b}
	case "gemini":
		return &geminiActivity{activityBase: b}
	case "opencode":
		return &opencodeActivity{b}
	}
	return lineActivity{}
}

// maxOpenTools bounds the tool calls remembered until their results.
const maxOpenTools = 256

type activityBase struct {
	dir   string
	tools map[string]string // tool call id → tool name, until its result
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

// claudeActivity reads Claude Code's stream-json: tool_use blocks of
// assistant messages, tool_result blocks flagged is_error, and text blocks.
type claudeActivity struct{ activityBase }

func (a *claudeActivity) Line(line []byte) []Activity {
	var ev struct {
		Type    string `json:"type"`
		Message *struct {
			Content []struct {
				Type    string         `json:"type"`
				Text    string         `json:"text"`
				ID      string         `json:"id"`
				Name    string         `json:"name"`
				Input   map[string]any `json:"input"`
				ToolUse string         `json:"tool_use_id"`
				IsError bool           `json:"is_error"`
				Content any            `json:"content"`
			} `json:"content"`
		} `json:"message"`
	}
	if (!jsonLine(line, "assistant") && !jsonLine(line, "user")) || !decodeLine(line, &ev) || ev.Message == nil {
		return nil
	}
	var out []Activity
	for _, c := range ev.Message.Content {
		switch {
		case ev.Type == "assistant" && c.Type == "tool_use":
			a.open(c.ID, c.Name)
			out = append(out, tool(c.Name, a.summary(c.Input)))
		case ev.Type == "assistant" && c.Type == "text":
			out = append(out, message(c.Text)...)
		case ev.Type == "user" && c.Type == "tool_result":
			name := a.closeTool(c.ToolUse)
			if c.IsError {
				out = append(out, toolError(name, resultText(c.Content)))
			}
		}
	}
	return out
}

func (a *claudeActivity) Flush() []Activity { return nil }

// resultText is a tool result's text: a string, or the text blocks of a list.
func resultText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if m, ok := b.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// jsonLine is a cheap test that a line may be an event of one of the types
// an activity reader looks at, before it is decoded.
func jsonLine(line []byte, typ string) bool {
	return bytes.Contains(line, []byte(`"`+typ+`"`))
}

// codexActivity reads `codex exec --json`: commands as they start (and the
// ones that fail), file changes, agent messages.
type codexActivity struct{ activityBase }

func (a *codexActivity) Line(line []byte) []Activity {
	if !jsonLine(line, "item.started") && !jsonLine(line, "item.completed") {
		return nil
	}
	var ev struct {
		Type string `json:"type"`
		Item struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Command  string `json:"command"`
			Text     string `json:"text"`
			ExitCode *int   `json:"exit_code"`
			Output   string `json:"aggregated_output"`
			Status   string `json:"status"`
			Changes  []struct {
				Path string `json:"path"`
				Kind string `json:"kind"`
			} `json:"changes"`
			Server string `json:"server"`
			Tool   string `json:"tool"`
			Query  string `json:"query"`
		} `json:"item"`
	}
	if !decodeLine(line, &ev) {
		return nil
	}
	it := ev.Item
	switch {
	case it.Type == "command_execution" && ev.Type == "item.started":
		return []Activity{tool("Bash", shellCommand(it.Command))}
	case it.Type == "command_execution" && ev.Type == "item.completed" && (it.ExitCode != nil && *it.ExitCode != 0 || it.Status == "failed"):
		code := ""
		if it.ExitCode != nil {
			code = "exit " + strconv.Itoa(*it.ExitCode) + ": "
		}
		return []Activity{toolError("Bash", code+firstLine(it.Output))}
	case it.Type == "file_change" && ev.Type == "item.completed":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, a.rel(c.Path))
		}
		return []Activity{tool("Edit", strings.Join(paths, " "))}
	case it.Type == "mcp_tool_call" && ev.Type == "item.started":
		return []Activity{tool(it.Server+"."+it.Tool, "")}
	case it.Type == "web_search" && ev.Type == "item.started":
		return []Activity{tool("WebSearch", it.Query)}
	case it.Type == "agent_message" && ev.Type == "item.completed":
		return message(it.Text)
	}
	return nil
}

func (a *codexActivity) Flush() []Activity { return nil }

// shellCommand takes the command out of codex's `bash -lc '...'` wrapper.
func shellCommand(c string) string {
	for _, p := range []string{"bash -lc ", "/bin/bash -lc ", "sh -c "} {
		if rest, ok := strings.CutPrefix(c, p); ok {
			if u, err := strconv.Unquote(rest); err == nil {
				return u
			}
			if len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
				return rest[1 : len(rest)-1]
			}
			return rest
		}
	}
	return c
}

// geminiActivity reads Gemini CLI's stream-json: tool_use and tool_result
// events, and assistant messages, which come in pieces (delta) and are
// shown once a message is whole.
type geminiActivity struct {
	activityBase
	msg strings.Builder
}

var geminiTools = map[string]string{
	"run_shell_command":   "Bash",
	"write_file":          "Write",
	"replace":             "Edit",
	"read_file":           "Read",
	"read_many_files":     "Read",
	"glob":                "Glob",
	"search_file_content": "Grep",
	"list_directory":      "LS",
	"web_fetch":           "WebFetch",
	"google_web_search":   "WebSearch",
}

func (a *geminiActivity) Line(line []byte) []Activity {
	var ev struct {
		Type       string         `json:"type"`
		Role       string         `json:"role"`
		Content    string         `json:"content"`
		Delta      bool           `json:"delta"`
		ToolName   string         `json:"tool_name"`
		ToolID     string         `json:"tool_id"`
		Parameters map[string]any `json:"parameters"`
		Status     string         `json:"status"`
		Output     string         `json:"output"`
		Error      *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if !decodeLine(line, &ev) {
		return nil
	}
	if ev.Type == "message" && ev.Role == "assistant" {
		if a.msg.Len() < 4*maxActivityText {
			a.msg.WriteString(ev.Content)
		}
		if ev.Delta {
			return nil
		}
	}
	out := a.Flush()
	switch ev.Type {
	case "tool_use":
		name := ev.ToolName
		if n, ok := geminiTools[name]; ok {
			name = n
		}
		a.open(ev.ToolID, name)
		out = append(out, tool(name, a.summary(ev.Parameters)))
	case "tool_result":
		name := a.closeTool(ev.ToolID)
		if ev.Status == "error" {
			text := ev.Output
			if ev.Error != nil && ev.Error.Message != "" {
				text = ev.Error.Message
			}
			out = append(out, toolError(name, text))
		}
	}
	return out
}

func (a *geminiActivity) Flush() []Activity {
	if a.msg.Len() == 0 {
		return nil
	}
	text := a.msg.String()
	a.msg.Reset()
	return message(text)
}

// opencodeActivity reads `opencode run --format json`: tool parts with
// their state, and text parts.
type opencodeActivity struct{ activityBase }

func (a *opencodeActivity) Line(line []byte) []Activity {
	if !jsonLine(line, "tool_use") && !jsonLine(line, "text") {
		return nil
	}
	var ev struct {
		Type string `json:"type"`
		Part struct {
			Type  string `json:"type"`
			Text  string `json:"text"`
			Tool  string `json:"tool"`
			State struct {
				Status string         `json:"status"`
				Input  map[string]any `json:"input"`
				Error  string         `json:"error"`
			} `json:"state"`
		} `json:"part"`
	}
	if !decodeLine(line, &ev) {
		return nil
	}
	switch ev.Type {
	case "tool_use":
		name := ev.Part.Tool
		if name != "" {
			name = strings.ToUpper(name[:1]) + name[1:]
		}
		if ev.Part.State.Status == "error" {
			return []Activity{tool(name, a.summary(ev.Part.State.Input)), toolError(name, ev.Part.State.Error)}
		}
		return []Activity{tool(name, a.summary(ev.Part.State.Input))}
	case "text":
		return message(ev.Part.Text)
	}
	return nil
}

func (a *opencodeActivity) Flush() []Activity { return nil }
