package agents

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readActivities feeds a recorded output to the reader of kind, line by
// line, as the supervisor does.
func readActivities(t *testing.T, kind, file, dir string) []Activity {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", kind, file))
	require.NoError(t, err)
	defer f.Close()
	r := NewActivityReader(kind, dir)
	var out []Activity
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, r.Line(sc.Bytes())...)
	}
	require.NoError(t, sc.Err())
	return append(out, r.Flush()...)
}

func TestActivityFromRecordedOutputs(t *testing.T) {
	tests := []struct {
		kind, file string
		want       []Activity
	}{
		{"claude", "tool_bash_fail.out", []Activity{
			{Kind: ActivityTool, Tool: "Bash", Text: "echo boom >&2; exit 3"},
			{Kind: ActivityToolError, Tool: "Bash", Text: "Exit code 3"},
			{Kind: ActivityMessage, Text: "The command failed."},
		}},
		{"codex", "success.jsonl", []Activity{
			{Kind: ActivityMessage, Text: "I will write the file."},
			{Kind: ActivityTool, Tool: "Bash", Text: "printf 'hello from the model\\n' > hello.txt"},
			{Kind: ActivityMessage, Text: "Wrote hello.txt."},
		}},
		{"codex", "edge_cases.jsonl", []Activity{
			{Kind: ActivityTool, Tool: "Bash", Text: "go test ./..."},
			{Kind: ActivityTool, Tool: "Edit", Text: "calc/add.go"},
			{Kind: ActivityMessage, Text: "Fixed the off-by-one in Add; tests pass."},
		}},
		{"gemini", "tool_write.jsonl", []Activity{
			{Kind: ActivityMessage, Text: "I will write the file."},
			{Kind: ActivityTool, Tool: "Write", Text: "hello.txt"},
			{Kind: ActivityMessage, Text: "Wrote hello.txt."},
		}},
		{"opencode", "tool_write.jsonl", []Activity{
			{Kind: ActivityMessage, Text: "I will write the file."},
			{Kind: ActivityTool, Tool: "Write", Text: "hello.txt"},
			{Kind: ActivityMessage, Text: "Wrote hello.txt."},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.file, func(t *testing.T) {
			assert.Equal(t, tt.want, readActivities(t, tt.kind, tt.file, "/home/dev/repo"))
		})
	}
}

// Claude Code's file tools show the path relative to the work tree.
func TestClaudeActivityShowsPathsRelative(t *testing.T) {
	got := readActivities(t, "claude", "tool_write.out", "/home/dev/repo")
	require.NotEmpty(t, got)
	assert.Equal(t, ActivityTool, got[0].Kind)
	assert.Equal(t, "Write", got[0].Tool)
	assert.False(t, strings.HasPrefix(got[0].Text, "/home/dev/repo"), "path %q", got[0].Text)
}

// Whatever an agent prints, an activity is one bounded line.
func TestActivityIsOneBoundedLine(t *testing.T) {
	long := strings.Repeat("é", 1000)
	r := NewActivityReader("claude", "")
	got := r.Line([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"1","name":"Bash","input":{"command":"\n\n` + long + `\nsecond"}}]}}`))
	require.Len(t, got, 1)
	assert.NotContains(t, got[0].Text, "\n")
	assert.LessOrEqual(t, len([]rune(got[0].Text)), maxActivityText)

	got = NewActivityReader("command", "").Line([]byte("  " + long + "  "))
	require.Len(t, got, 1)
	assert.Equal(t, ActivityOutput, got[0].Kind)
	assert.LessOrEqual(t, len([]rune(got[0].Text)), maxActivityText)
	assert.Empty(t, NewActivityReader("command", "").Line([]byte("   ")))
}

// A reader remembers a bounded number of open tool calls.
func TestActivityOpenToolsBounded(t *testing.T) {
	r := NewActivityReader("claude", "").(*claudeActivity)
	for i := 0; i < 10*maxOpenTools; i++ {
		r.Line([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"` + strings.Repeat("x", i%50) + string(rune('a'+i%26)) + `-` + strconv.Itoa(i) + `","name":"Bash","input":{}}]}}`))
	}
	assert.LessOrEqual(t, len(r.tools), maxOpenTools)
}
