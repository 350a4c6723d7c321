package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

func stoppedState(id string, code stopreasons.Code, msg string) *state.State {
	return &state.State{
		RunID: id,
		StopReason: &state.StopReason{
			Stop:     stopreasons.Stop{Code: code, Message: msg},
			ExitCode: stopreasons.ExitCode(code),
		},
	}
}

// parseGitHubOutput reads a $GITHUB_OUTPUT file as the runner does: a
// name=value line, or name<<DELIMITER, the value's lines, and DELIMITER.
func parseGitHubOutput(t *testing.T, text string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		eq, hd := strings.Index(l, "="), strings.Index(l, "<<")
		if hd >= 0 && (eq < 0 || hd < eq) {
			name, delim := l[:hd], l[hd+2:]
			var value []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				value = append(value, lines[i])
			}
			require.Less(t, i, len(lines), "no closing delimiter %q", delim)
			out[name] = append(out[name], strings.Join(value, "\n"))
			continue
		}
		require.GreaterOrEqual(t, eq, 0, "line %q is neither name=value nor name<<DELIMITER", l)
		out[l[:eq]] = append(out[l[:eq]], l[eq+1:])
	}
	return out
}

func TestGitHubOutputsHoldOneValueEach(t *testing.T) {
	for _, id := range []string{
		"20260101T000000Z-abcdef",
		"evil\nexit_code=0",
		"evil\r\nstop_reason<<EOF\ncomplete\nEOF",
		"ghadelimiter_0\nexit_code=0\nghadelimiter_0",
	} {
		st := stoppedState(id, stopreasons.WorkerBlocked, "")
		st.Usage.CostUSD = 0.1 + 0.2
		got := parseGitHubOutput(t, githubOutputs(st))
		assert.Equal(t, map[string][]string{
			"run_id":      {id},
			"stop_reason": {"worker_blocked"},
			"exit_code":   {"30"},
			"cost_usd":    {"0.3"},
		}, got, "run id %q", id)
	}
}

func TestGitHubAnnotation(t *testing.T) {
	assert.Empty(t, githubAnnotation(stoppedState("r1", stopreasons.Complete, "done"), nil), "a success has no annotation")

	line := githubAnnotation(stoppedState("r2", stopreasons.WorkerBlocked, "100% stuck\n::warning::x\r\x1b[2Jgone, really: yes"), nil)
	assert.NotContains(t, line, "\n")
	assert.NotContains(t, line, "\r")
	assert.NotContains(t, line, "\x1b")
	assert.Equal(t, `::error title=runr%3A worker_blocked (exit 30)::run r2 stopped: worker_blocked · Agent reported it is blocked: 100%25 stuck\n::warning::x\r\x1b[2Jgone, really: yes`, line)

	// An unknown code is a failure too.
	assert.True(t, strings.HasPrefix(githubAnnotation(stoppedState("r3", "made_up", ""), nil), "::error title=runr%3A made_up"))
}

func TestEscapeGitHubProperty(t *testing.T) {
	assert.Equal(t, "a%3Ab%2Cc%25d%0De%0Af", escapeGitHubProperty("a:b,c%d\re\nf"))
	assert.Equal(t, "a:b,c%25d%0De%0Af", escapeGitHubData("a:b,c%d\re\nf"))
}

func TestGitHubReportOnlyInActions(t *testing.T) {
	dir := t.TempDir()
	store, err := state.Open(filepath.Join(dir, "store"))
	require.NoError(t, err)
	summary, output := filepath.Join(dir, "summary.md"), filepath.Join(dir, "output")
	env := []string{"GITHUB_STEP_SUMMARY=" + summary, "GITHUB_OUTPUT=" + output}
	st := stoppedState("r1", stopreasons.WorkerBlocked, "no key")

	io, _, errb := testStreams()
	io.Environ = env
	githubReport(io, store, st)
	assert.NoFileExists(t, summary)
	assert.NoFileExists(t, output)
	assert.Empty(t, errb.String())

	io.Environ = append(env, "GITHUB_ACTIONS=true")
	githubReport(io, store, st)
	githubReport(io, store, st)
	b, err := os.ReadFile(output)
	require.NoError(t, err)
	assert.Equal(t, []string{"r1", "r1"}, parseGitHubOutput(t, string(b))["run_id"], "appended, not replaced")
	b, err = os.ReadFile(summary)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(b), "### ❌ runr run `r1`: worker_blocked"))
	assert.Equal(t, 2, strings.Count(errb.String(), "::error "))
}

func TestGitHubFileRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, exec.Command("mkfifo", fifo).Run())
	io, _, errb := testStreams()
	// No reader: the open fails at once instead of waiting for one.
	appendGitHubFile(io, "GITHUB_OUTPUT", fifo, "x=1\n")
	assert.Contains(t, errb.String(), "runr: warning: GITHUB_OUTPUT: cannot append to")

	// A reader: the open succeeds, and the FIFO is still refused.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer r.Close()
	errb.Reset()
	appendGitHubFile(io, "GITHUB_OUTPUT", fifo, "x=1\n")
	assert.Contains(t, errb.String(), "it is not a regular file")
}

// actionFile is the part of action.yml this test reads; tests/action_test.go
// runs its steps.
type actionFile struct {
	Outputs map[string]struct{ Description, Value string } `yaml:"outputs"`
	Runs    struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID  string `yaml:"id"`
			Run string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

// TestActionYAML: every output runr writes as a step is an output of the
// action, taken from the step that runs runr.
func TestActionYAML(t *testing.T) {
	b, err := os.ReadFile("../../action.yml")
	require.NoError(t, err)
	var a actionFile
	require.NoError(t, yaml.Unmarshal(b, &a))
	assert.Equal(t, "composite", a.Runs.Using)
	run := ""
	for _, s := range a.Runs.Steps {
		if strings.Contains(s.Run, `"$RUNNER_TEMP/runr" "${args[@]}"`) {
			run = s.ID
		}
	}
	require.NotEmpty(t, run, "no step runs runr run with an id")
	for name := range parseGitHubOutput(t, githubOutputs(stoppedState("r", stopreasons.Complete, ""))) {
		require.Contains(t, a.Outputs, name)
		assert.Equal(t, "${{ steps."+run+".outputs."+name+" }}", a.Outputs[name].Value, name)
	}
}
