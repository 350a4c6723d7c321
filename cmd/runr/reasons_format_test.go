package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// podFailurePolicy mirrors batch/v1 PodFailurePolicy (k8s.io/api/batch/v1)
// with its YAML field names; decoding with KnownFields rejects any key the
// API type does not have.
type podFailurePolicy struct {
	Rules []struct {
		Action      string `yaml:"action"`
		OnExitCodes *struct {
			ContainerName *string `yaml:"containerName"`
			Operator      string  `yaml:"operator"`
			Values        []int32 `yaml:"values"`
		} `yaml:"onExitCodes"`
		OnPodConditions []struct {
			Type   string `yaml:"type"`
			Status string `yaml:"status"`
		} `yaml:"onPodConditions"`
	} `yaml:"rules"`
}

func decodePolicy(t *testing.T, text string) podFailurePolicy {
	t.Helper()
	var spec struct {
		PodFailurePolicy *podFailurePolicy `yaml:"podFailurePolicy"`
	}
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&spec), text)
	require.NotNil(t, spec.PodFailurePolicy, text)
	return *spec.PodFailurePolicy
}

// checkPolicyRules holds a policy to the API's validation of onExitCodes
// (operator In or NotIn, 1 to 255 values, unique and ascending, no 0 with
// In; at most 20 rules) and returns the exit codes under each action.
func checkPolicyRules(t *testing.T, p podFailurePolicy, container string) map[string][]int32 {
	t.Helper()
	require.LessOrEqual(t, len(p.Rules), 20, "batch/v1 allows at most 20 rules")
	byAction := map[string][]int32{}
	for i, r := range p.Rules {
		require.Contains(t, []string{"Ignore", "Count", "FailJob", "FailIndex"}, r.Action, "rule %d", i)
		require.True(t, (r.OnExitCodes == nil) != (len(r.OnPodConditions) == 0), "rule %d: exactly one of onExitCodes and onPodConditions", i)
		if r.OnExitCodes == nil {
			continue
		}
		c := r.OnExitCodes
		require.NotNil(t, c.ContainerName, "rule %d", i)
		assert.Equal(t, container, *c.ContainerName, "rule %d", i)
		assert.Equal(t, "In", c.Operator, "rule %d", i)
		require.NotEmpty(t, c.Values, "rule %d", i)
		assert.LessOrEqual(t, len(c.Values), 255, "rule %d", i)
		assert.True(t, slices.IsSorted(c.Values), "rule %d: values sorted", i)
		assert.Equal(t, len(c.Values), len(slices.Compact(slices.Clone(c.Values))), "rule %d: values unique", i)
		assert.NotContains(t, c.Values, int32(0), "rule %d: 0 is not allowed with In", i)
		byAction[r.Action] = append(byAction[r.Action], c.Values...)
	}
	return byAction
}

func TestReasonsK8sPodFailurePolicyFollowsTheRegistry(t *testing.T) {
	for _, tc := range []struct{ format, container, fail string }{
		{"k8s-pod-failure-policy", "", "FailJob"},
		{"k8s-pod-failure-policy", "agent-1", "FailJob"},
		{"k8s-pod-failure-policy-indexed", "", "FailIndex"},
		{"k8s-pod-failure-policy-indexed", "agent-1", "FailIndex"},
	} {
		container := tc.container
		args := []string{"reasons", "--format", tc.format}
		want := "runr"
		if container != "" {
			args = append(args, "--container", container)
			want = container
		}
		io, out, errb := testStreams()
		require.Equal(t, 0, Main(args, io), errb.String())
		p := decodePolicy(t, out.String())
		byAction := checkPolicyRules(t, p, want)

		require.NotEmpty(t, p.Rules)
		assert.Equal(t, "Ignore", p.Rules[0].Action, "a disruption is matched first")
		require.Len(t, p.Rules[0].OnPodConditions, 1)
		assert.Equal(t, "DisruptionTarget", p.Rules[0].OnPodConditions[0].Type)
		assert.Equal(t, "True", p.Rules[0].OnPodConditions[0].Status)

		seen := map[int32]int{}
		for _, codes := range byAction {
			for _, c := range codes {
				seen[c]++
			}
		}
		for _, r := range stopreasons.All() {
			exit := int32(r.ExitCode)
			if r.ExitCode == 0 {
				assert.Zero(t, seen[exit], "%s: exit 0 is a success, in no rule", r.Code)
				continue
			}
			assert.Equal(t, 1, seen[exit], "%s: exit %d in exactly one rule", r.Code, exit)
			if r.AutoResumable {
				assert.Contains(t, byAction["Count"], exit, "%s is auto-resumable", r.Code)
			} else {
				assert.Contains(t, byAction[tc.fail], exit, "%s is not auto-resumable (%s)", r.Code, tc.format)
			}
		}
		var auto []int32
		for _, c := range stopreasons.AutoResumableSet() {
			auto = append(auto, int32(stopreasons.ExitCode(c)))
		}
		slices.Sort(auto)
		assert.Equal(t, auto, byAction["Count"], "Count lists the auto-resumable exit codes and no other")
		assert.Len(t, seen, len(groupByExit(stopreasons.All()))-1, "no exit code outside the registry")
	}
}

func TestK8sPodFailurePolicyLimits(t *testing.T) {
	// More exit codes than one rule may list: split into rules of 255.
	var rows []stopreasons.Reason
	for exit := 300; exit >= 0; exit-- {
		rows = append(rows, stopreasons.Reason{Code: stopreasons.Code(fmt.Sprintf("r%d", exit)), ExitCode: exit, AutoResumable: exit%100 == 7})
	}
	// Two reasons on one exit code: retried only if both are.
	rows = append(rows, stopreasons.Reason{Code: "shares_7", ExitCode: 7}, stopreasons.Reason{Code: "shares_107", ExitCode: 107, AutoResumable: true})
	text, err := K8sPodFailurePolicy(rows, "c", false)
	require.NoError(t, err)
	p := decodePolicy(t, text)
	byAction := checkPolicyRules(t, p, "c")
	assert.Equal(t, []int32{107, 207}, byAction["Count"])
	assert.Len(t, byAction["FailJob"], 300-2)
	assert.Contains(t, byAction["FailJob"], int32(7))
	assert.Len(t, p.Rules, 1+1+2, "Ignore, Count, and FailJob split in two")
	assert.Contains(t, text, "- 7 # r7, shares_7\n")

	for _, bad := range []string{"", "Runr", "runr_1", "-runr", "runr-", strings.Repeat("a", 64)} {
		_, err := K8sPodFailurePolicy(stopreasons.All(), bad, false)
		var se *stopreasons.Error
		require.ErrorAs(t, err, &se, "%q", bad)
		assert.Equal(t, stopreasons.UsageError, se.Code, "%q", bad)
	}
	_, err = K8sPodFailurePolicy(stopreasons.All(), strings.Repeat("a", 63), false)
	assert.NoError(t, err)
}

func writeGitHubSnippet(t *testing.T) string {
	t.Helper()
	io, out, errb := testStreams()
	require.Equal(t, 0, Main([]string{"reasons", "--format", "github"}, io), errb.String())
	path := filepath.Join(t.TempDir(), "runr-exit.sh")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	return path
}

// runSh runs script with sh and the snippet at $1; it returns stdout.
func runSh(t *testing.T, shell, script, snippet string, env ...string) string {
	t.Helper()
	cmd := exec.Command(shell, "-c", script, "sh", snippet)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s", stderr.String())
	require.Empty(t, stderr.String())
	return string(out)
}

func TestReasonsGitHubSnippetBranches(t *testing.T) {
	snippet := writeGitHubSnippet(t)
	shells := []string{"sh"}
	if _, err := exec.LookPath("bash"); err == nil {
		shells = append(shells, "bash") // a GitHub Actions step's default shell
	}
	for _, shell := range shells {
		out, err := exec.Command(shell, "-n", snippet).CombinedOutput()
		require.NoError(t, err, "%s -n: %s", shell, out)

		// Each registry exit code, given in RUNR_EXIT, takes its own branch.
		var script strings.Builder
		for _, r := range stopreasons.All() {
			fmt.Fprintf(&script, "RUNR_EXIT=%d; . \"$1\"; echo \"reason=$runr_reason exit=$runr_exit\"\n", r.ExitCode)
		}
		got := strings.Split(strings.TrimSpace(runSh(t, shell, script.String(), snippet)), "\n")
		require.Len(t, got, 2*len(stopreasons.All()), "%s: an annotation and a reason per code", shell)
		for i, r := range stopreasons.All() {
			annotation, result := got[2*i], got[2*i+1]
			assert.Equal(t, fmt.Sprintf("reason=%s exit=%d", r.Code, r.ExitCode), result, shell)
			level := "::error "
			switch {
			case r.Category == stopreasons.CategoryCompleted:
				level = "::notice "
			case r.AutoResumable:
				level = "::warning "
			}
			assert.True(t, strings.HasPrefix(annotation, level), "%s: %s: %s", shell, r.Code, annotation)
			assert.Contains(t, annotation, fmt.Sprintf("title=runr %s (exit %d)::%s", r.Code, r.ExitCode, r.Title), shell)
		}

		// Without RUNR_EXIT it reads $? of the command before it.
		out2 := runSh(t, shell, `(exit 143); . "$1"; echo "reason=$runr_reason"`, snippet)
		assert.Contains(t, out2, "reason=terminated", shell)
		assert.Contains(t, out2, "auto-resumable: runr resume latest --auto-resume", shell)
		out3 := runSh(t, shell, `false; . "$1"; echo "reason=$runr_reason"`, snippet, "RUNR_EXIT=")
		assert.Contains(t, out3, "reason=internal_error", shell)

		// An exit code no reason has is a failure.
		out4 := runSh(t, shell, `. "$1"; echo "reason=$runr_reason"`, snippet, "RUNR_EXIT=137")
		assert.Equal(t, "::error title=runr exit 137::not a stop reason of this runr; treat it as a failure\nreason=unknown\n", out4, shell)
	}
}

func TestReasonsFormats(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		io, out, errb := testStreams()
		code := Main(append([]string{"reasons"}, args...), io)
		return code, out.String(), errb.String()
	}
	// The aliases print what their format prints.
	for _, pair := range [][2][]string{
		{{"--json"}, {"--format", "json"}},
		{{"--markdown"}, {"--format", "markdown"}},
		{{"--markdown", "--format", "markdown"}, {"--format=markdown"}},
		{{}, {"--format", "table"}},
		{{"--family", "user", "--json"}, {"--family", "user", "--format", "json"}},
		{{"124"}, {"124", "--format", "table"}},
	} {
		c1, o1, e1 := run(pair[0]...)
		c2, o2, e2 := run(pair[1]...)
		require.Equal(t, 0, c1, "%v: %s", pair[0], e1)
		require.Equal(t, 0, c2, "%v: %s", pair[1], e2)
		assert.Equal(t, o1, o2, "%v and %v", pair[0], pair[1])
	}
	_, md, _ := run("--format", "markdown")
	assert.Equal(t, ReasonsMarkdown(), md)

	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"--format", "yaml"}, "--format yaml: no such format (formats: " + strings.Join(ReasonsFormats, ", ") + ")"},
		{[]string{"--format", ""}, "no such format"},
		{[]string{"--json", "--format", "markdown"}, "--json is --format json and cannot be used with --format markdown"},
		{[]string{"--markdown", "--format", "github"}, "cannot be used with --format github"},
		{[]string{"--json", "--markdown"}, "cannot be used together"},
		{[]string{"--format", "github", "timeout"}, "covers the whole registry"},
		{[]string{"--format", "k8s-pod-failure-policy", "--family", "user"}, "covers the whole registry"},
		{[]string{"--markdown", "124"}, "covers the whole registry"},
		{[]string{"--format", "k8s-pod-failure-policy", "--container", "My_Agent"}, `--container "My_Agent": a Kubernetes container name`},
		{[]string{"--format", "github", "--container", "agent"}, "--container goes with --format k8s-pod-failure-policy or k8s-pod-failure-policy-indexed only"},
	} {
		code, out, errb := run(tt.args...)
		assert.Equal(t, 64, code, "%v", tt.args)
		assert.Empty(t, out, "%v", tt.args)
		assert.Contains(t, errb, tt.err, "%v", tt.args)
	}
}

func TestCompleteReasonsFormat(t *testing.T) {
	assert.Equal(t, ReasonsFormats, complete(t, "reasons", "--format", ""))
}

// The Job of docs/cli.md carries the policy this runr prints.
func TestDocsJobExampleHasTheGeneratedPolicy(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	_, rest, found := strings.Cut(string(b), "```yaml\napiVersion: batch/v1\nkind: Job\n")
	require.True(t, found, "docs/cli.md has a Job example")
	manifest, _, found := strings.Cut(rest, "```")
	require.True(t, found)
	var job struct {
		Spec struct {
			BackoffLimit     *int32           `yaml:"backoffLimit"`
			PodFailurePolicy podFailurePolicy `yaml:"podFailurePolicy"`
			Template         struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Name string `yaml:"name"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &job))
	assert.Equal(t, "Never", job.Spec.Template.Spec.RestartPolicy, "podFailurePolicy requires restartPolicy Never")
	require.NotNil(t, job.Spec.BackoffLimit)
	require.Len(t, job.Spec.Template.Spec.Containers, 1)
	assert.Equal(t, defaultK8sContainer, job.Spec.Template.Spec.Containers[0].Name)

	policy, err := K8sPodFailurePolicy(stopreasons.All(), defaultK8sContainer, false)
	require.NoError(t, err)
	assert.Equal(t, decodePolicy(t, policy), job.Spec.PodFailurePolicy, "docs/cli.md's Job example: paste 'runr reasons --format k8s-pod-failure-policy'")
}
