package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runrOut runs runr in repo to its end and returns its exit code, stdout
// and stderr.
func runrOut(t *testing.T, repo string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "runr"), args...)
	cmd.Dir = repo
	cmd.Env = testEnv(repo)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("runr %v did not run: %v", args, err)
	return -1, "", ""
}

// summaryField is one row of the table of the --json summary in
// docs/cli.md.
type summaryField struct {
	name, typ    string
	worktreeOnly bool
	switchOnly   bool // only in the summary of a run that switched to a fallback agent
}

// documentedSummary reads the table of the run summary's fields from
// docs/cli.md, so that the schema tested is the schema documented.
func documentedSummary(t *testing.T) map[string]summaryField {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "cli.md"))
	require.NoError(t, err)
	doc := string(b)
	start := strings.Index(doc, "The summary's fields:")
	require.GreaterOrEqual(t, start, 0, "docs/cli.md has the table of the --json summary")
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\| ([a-z ]+) \\| (.*) \\|$")
	fields := map[string]summaryField{}
	for _, line := range strings.Split(doc[start:], "\n")[1:] {
		if strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| field ") || line == "" && len(fields) == 0 {
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			break
		}
		fields[m[1]] = summaryField{name: m[1], typ: m[2], worktreeOnly: strings.HasPrefix(m[3], "`--worktree` runs only"),
			switchOnly: strings.HasPrefix(m[3], "runs that switched to a fallback agent only")}
	}
	require.Len(t, fields, 17, "rows of the summary table")
	return fields
}

// decodeSummary checks that stdout is exactly one JSON object, every field
// of which is documented with its type, and every documented field that is
// always there is there.
func decodeSummary(t *testing.T, stdout string, doc map[string]summaryField, worktree bool) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var v map[string]any
	require.NoError(t, dec.Decode(&v), "stdout is one JSON object: %q", stdout)
	_, err := dec.Token()
	require.ErrorIs(t, err, io.EOF, "nothing after the object on stdout: %q", stdout)
	require.True(t, strings.HasPrefix(stdout, "{"), "nothing before it either")
	for name, val := range v {
		f, ok := doc[name]
		if !assert.True(t, ok, "field %s is not in docs/cli.md", name) {
			continue
		}
		assert.Equal(t, f.typ, jsonTypeOf(val, f.typ), "type of %s", name)
	}
	for name, f := range doc {
		if f.switchOnly {
			// These runs have no fallback agent (agents_fallback_test.go
			// has the runs that switch).
			assert.NotContains(t, v, name, "%s belongs to runs that switched agents", name)
			continue
		}
		if !f.worktreeOnly || worktree {
			assert.Contains(t, v, name, "documented field %s", name)
		} else {
			assert.NotContains(t, v, name, "%s belongs to --worktree runs", name)
		}
	}
	// The documented members of the objects.
	sr, _ := v["stop_reason"].(map[string]any)
	for _, k := range []string{"code", "message", "family", "category", "terminal_status"} {
		assert.IsType(t, "", sr[k], "stop_reason.%s", k)
	}
	assert.Equal(t, v["exit_code"], sr["exit_code"], "stop_reason.exit_code")
	st, _ := v["statistics"].(map[string]any)
	for _, k := range []string{"total_milestones", "attempted", "approved", "rejected", "failed", "consecutive_fails"} {
		assert.Equal(t, "integer", jsonTypeOf(st[k], "integer"), "statistics.%s", k)
	}
	for _, k := range []string{"retry_rate", "reject_rate"} {
		assert.Equal(t, "number", jsonTypeOf(st[k], "number"), "statistics.%s", k)
	}
	u, _ := v["usage"].(map[string]any)
	assert.Equal(t, "number", jsonTypeOf(u["cost_usd"], "number"), "usage.cost_usd")
	for _, k := range []string{"input_tokens", "output_tokens"} {
		assert.Equal(t, "integer", jsonTypeOf(u[k], "integer"), "usage.%s", k)
	}
	return v
}

// jsonTypeOf names the JSON type of v in the docs' words; a whole number
// is an "integer" unless the docs say "number".
func jsonTypeOf(v any, want string) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if want == "number" || x != math.Trunc(x) {
			return "number"
		}
		return "integer"
	case map[string]any:
		return "object"
	case []any:
		if len(x) == 0 && strings.HasPrefix(want, "array") {
			return want // an empty array is an array of anything
		}
		for _, e := range x {
			if _, ok := e.(string); !ok {
				return "array"
			}
		}
		return "array of strings"
	case nil:
		return "null"
	}
	return "unknown"
}

var progressLine = regexp.MustCompile(`(?m)^runr: tick \d+ `)

// `runr run --json` and `runr resume --json` print exactly one JSON object,
// the documented summary, on stdout; progress stays on stderr unless
// --quiet.
func TestJSONSummaryOnStdoutProgressOnStderr(t *testing.T) {
	doc := documentedSummary(t)
	repo := newRepo(t)
	agent := []string{"--verify", "true", "--", "fakeagent", "--do", "write a.txt 1"}

	code, stdout, stderr := runrOut(t, repo, append([]string{"run", "--json", "--max-ticks", "1", "--prompt", "work"}, agent...)...)
	require.Equal(t, 125, code, "stderr: %s", stderr)
	v := decodeSummary(t, stdout, doc, false)
	assert.Equal(t, "max_ticks", v["stop_reason"].(map[string]any)["code"])
	assert.Equal(t, float64(125), v["exit_code"])
	assert.Equal(t, true, v["resumable"])
	assert.Regexp(t, progressLine, stderr, "progress stays on stderr with --json")
	id := v["run_id"].(string)

	code, stdout, stderr = runrOut(t, repo, "resume", id, "--json", "--max-ticks", "1")
	require.Equal(t, 125, code, "stderr: %s", stderr)
	v = decodeSummary(t, stdout, doc, false)
	assert.Equal(t, id, v["run_id"])
	assert.Regexp(t, progressLine, stderr, "progress stays on stderr with resume --json")

	code, stdout, stderr = runrOut(t, repo, "resume", id, "--json", "--quiet", "--max-ticks", "5")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	v = decodeSummary(t, stdout, doc, false)
	assert.Equal(t, "completed", v["run_status"])
	assert.Equal(t, float64(0), v["exit_code"])
	assert.NotRegexp(t, progressLine, stderr, "--quiet: no progress")

	code, stdout, stderr = runrOut(t, repo, append([]string{"run", "--worktree", "--json", "--quiet", "--prompt", "work"}, agent...)...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	v = decodeSummary(t, stdout, doc, true)
	assert.Equal(t, "runr/"+v["run_id"].(string), v["branch"])
	assert.DirExists(t, v["worktree"].(string))
	assert.NotRegexp(t, progressLine, stderr, "--quiet: no progress")
	assert.NotContains(t, stderr, "{", "the summary is not on stderr")
}
