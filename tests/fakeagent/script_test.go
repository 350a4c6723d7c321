package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStep(t *testing.T) {
	tests := []struct {
		line      string
		selectors []selector
		actions   []action
	}{
		{"print hi", nil, []action{{"print", []string{"hi"}}}},
		{"print RUNR_STATUS: done", nil, []action{{"print", []string{"RUNR_STATUS: done"}}}},
		{"@3: status done", []selector{{'@', 3, 3}}, []action{{"status", []string{"done"}}}},
		{"@2-4: exit 3", []selector{{'@', 2, 4}}, []action{{"exit", []string{"3"}}}},
		{"@5+: promise", []selector{{'@', 5, -1}}, []action{{"promise", nil}}},
		{"m2 #1: hang", []selector{{'m', 2, 2}, {'#', 1, 1}}, []action{{"hang", nil}}},
		{
			"write dir/a.txt line one\\nline two; append b.txt x\\;y ; rename a b",
			nil,
			[]action{
				{"write", []string{"dir/a.txt", "line one\nline two"}},
				{"append", []string{"b.txt", "x;y"}},
				{"rename", []string{"a", "b"}},
			},
		},
		{"write empty.txt", nil, []action{{"write", []string{"empty.txt"}}}},
		{"usage 100 20 0.5 gpt-5; usage 1 2", nil, []action{{"usage", []string{"100", "20", "0.5", "gpt-5"}}, {"usage", []string{"1", "2"}}}},
		{"status blocked no API key: ask ops", nil, []action{{"status", []string{"blocked", "no API key: ask ops"}}}},
		{"eprint back\\\\slash \\x", nil, []action{{"eprint", []string{"back\\slash \\x"}}}},
		{"flood 1G; flood-lines 10; sleep 30s; grandchild; background 5s", nil, []action{
			{"flood", []string{"1G"}}, {"flood-lines", []string{"10"}}, {"sleep", []string{"30s"}},
			{"grandchild", nil}, {"background", []string{"5s"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			s, err := parseStep(tt.line)
			require.NoError(t, err)
			assert.Equal(t, tt.selectors, s.selectors)
			assert.Equal(t, tt.actions, s.actions)
		})
	}
}

func TestParseStepErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{"wrte a b", `unknown action "wrte"`},
		{"@x: print hi", `unknown action "@x:"`},
		{"@3:", "no action"},
		{"print a; #2: print b", "selectors go at the start of a step"},
		{"print a; @1 m2: print b", "selectors go at the start of a step"},
		{"exit", "exit takes 1 argument(s)"},
		{"exit 300", "exit takes a code from 0 to 255"},
		{"sleep soon", `"soon" is not a duration`},
		{"status blocked", "status blocked needs a reason"},
		{"status done now", "status takes done, failed or blocked WHY"},
		{"rename a", "rename takes 2 argument(s)"},
		{"delete a b", "delete takes 1 argument(s)"},
		{"flood lots", `"lots" is not a size`},
		{"usage 1", "usage takes"},
		{"usage -1 2", `"-1" is not a token count`},
		{"usage 1 2 free", `"free" is not a cost in USD`},
		{"promise now", "promise takes 0 argument(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			_, err := parseStep(tt.line)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestParseScriptSkipsCommentsAndNamesLines(t *testing.T) {
	steps, err := parseScript("script s.txt", "# setup\n\n// more\n#1: print first\nprint always\n")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	assert.Equal(t, "script s.txt line 4", steps[0].where)
	assert.Equal(t, []selector{{'#', 1, 1}}, steps[0].selectors)

	_, err = parseScript("script s.txt", "print ok\nbogus\n")
	assert.EqualError(t, err, `script s.txt line 2: unknown action "bogus" (run fakeagent -h for the list)`)
}

func TestSelectorMatches(t *testing.T) {
	tests := []struct {
		sel  string
		c    call
		want bool
	}{
		{"@3", call{iteration: 3}, true},
		{"@3", call{iteration: 4}, false},
		{"@2-4", call{iteration: 2}, true},
		{"@2-4", call{iteration: 4}, true},
		{"@2-4", call{iteration: 5}, false},
		{"@5+", call{iteration: 50}, true},
		{"@5+", call{iteration: 4}, false},
		{"@1", call{}, false},
		{"m2", call{milestone: 2}, true},
		{"m2", call{milestone: 1, iteration: 2}, false},
		{"#1", call{number: 1, iteration: 7}, true},
		{"#2+", call{number: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			sel, ok := parseSelector(tt.sel)
			require.True(t, ok)
			assert.Equal(t, tt.want, sel.matches(tt.c))
		})
	}
	for _, bad := range []string{"@", "@x", "@4-2", "m", "mkdir", "#-1", "@1-"} {
		_, ok := parseSelector(bad)
		assert.False(t, ok, bad)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"4096", 4096}, {"64K", 64 << 10}, {"10M", 10 << 20}, {"1G", 1 << 30},
		{"2GB", 2 << 30}, {"3MiB", 3 << 20}, {"1k", 1 << 10},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{"", "G", "-1", "1X"} {
		_, err := parseSize(bad)
		assert.Error(t, err, bad)
	}
}
