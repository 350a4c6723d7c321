// Package k8s checks the CI examples of docs/examples against runr's
// stop-reason registry: the Kubernetes Job, decoded strictly into the
// Kubernetes API types, and the GitLab CI job. It is a module of its own so
// that k8s.io/api stays out of runr's module graph.
package k8s

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// root is the repository root: runr's own module.
const root = "../.."

var (
	buildOnce sync.Once
	runrBin   string
	buildErr  error
)

// runr runs the runr built from this checkout and returns its stdout.
func runr(t *testing.T, args ...string) []byte {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "runr-k8s-test-")
		if err != nil {
			buildErr = err
			return
		}
		runrBin = filepath.Join(dir, "runr")
		cmd := exec.Command("go", "build", "-o", runrBin, "./cmd/runr")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err, out}
		}
	})
	if buildErr != nil {
		t.Fatalf("building runr: %v", buildErr)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(runrBin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("runr %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

func TestMain(m *testing.M) {
	code := m.Run()
	if runrBin != "" {
		os.RemoveAll(filepath.Dir(runrBin))
	}
	os.Exit(code)
}

// autoResumableCodes are the exit codes of the registry's auto-resumable
// stop reasons, sorted, as `runr reasons --format json` lists them.
func autoResumableCodes(t *testing.T) []int32 {
	t.Helper()
	var reasons []struct {
		Code          string `json:"code"`
		ExitCode      int32  `json:"exit_code"`
		AutoResumable bool   `json:"auto_resumable"`
	}
	if err := json.Unmarshal(runr(t, "reasons", "--format", "json"), &reasons); err != nil {
		t.Fatal(err)
	}
	var codes []int32
	for _, r := range reasons {
		if r.AutoResumable {
			codes = append(codes, r.ExitCode)
		}
	}
	if len(codes) == 0 {
		t.Fatal("the registry lists no auto-resumable reason")
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// k8sExample returns the documents of docs/examples/k8s-job.yaml: the
// PersistentVolumeClaim and the Job, each decoded strictly (an unknown or
// misspelt field is an error).
func k8sExample(t *testing.T) (*corev1.PersistentVolumeClaim, *batchv1.Job, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs/examples/k8s-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("k8s-job.yaml has %d documents, want 2 (the claim, the Job)", len(docs))
	}
	var pvc corev1.PersistentVolumeClaim
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &pvc); err != nil {
		t.Fatalf("the PersistentVolumeClaim: %v", err)
	}
	if pvc.APIVersion != "v1" || pvc.Kind != "PersistentVolumeClaim" {
		t.Fatalf("first document is %s %s, want v1 PersistentVolumeClaim", pvc.APIVersion, pvc.Kind)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &job); err != nil {
		t.Fatalf("the Job: %v", err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("second document is %s %s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	return &pvc, &job, data
}

// TestK8sJobPolicyCodes: the policy counts exactly the registry's
// auto-resumable exit codes, on the Job's container, ignores disruptions,
// and fails the Job on every other code it names.
func TestK8sJobPolicyCodes(t *testing.T) {
	_, job, _ := k8sExample(t)
	want := autoResumableCodes(t)
	containers := job.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		t.Fatalf("the Job has %d containers, want 1", len(containers))
	}
	name := containers[0].Name

	var counted, failed []int32
	ignoresDisruption := false
	for i, rule := range job.Spec.PodFailurePolicy.Rules {
		if ec := rule.OnExitCodes; ec != nil {
			if ec.ContainerName == nil || *ec.ContainerName != name {
				t.Errorf("rule %d applies to container %v, the Job's container is %q", i, ec.ContainerName, name)
			}
			if ec.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn {
				t.Errorf("rule %d: operator %s, want In", i, ec.Operator)
			}
			switch rule.Action {
			case batchv1.PodFailurePolicyActionCount:
				counted = append(counted, ec.Values...)
			case batchv1.PodFailurePolicyActionFailJob:
				failed = append(failed, ec.Values...)
			default:
				t.Errorf("rule %d: action %s on exit codes", i, rule.Action)
			}
		}
		for _, c := range rule.OnPodConditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && rule.Action == batchv1.PodFailurePolicyActionIgnore {
				ignoresDisruption = true
			}
		}
	}
	slices.Sort(counted)
	if !slices.Equal(counted, want) {
		t.Errorf("Count covers exit codes %v, the registry's auto-resumable codes are %v", counted, want)
	}
	for _, c := range failed {
		if slices.Contains(want, c) {
			t.Errorf("auto-resumable exit code %d fails the Job", c)
		}
		if c == 0 {
			t.Error("exit code 0 is listed under FailJob")
		}
	}
	if !ignoresDisruption {
		t.Error("no rule ignores the DisruptionTarget pod condition")
	}
}

// TestK8sJobResumesOnTheVolume: the pod can be replaced: restartPolicy
// Never (podFailurePolicy requires it), a backoffLimit, a fixed --run-id,
// and the run store (RUNR_HOME or --home) on the claim's volume.
func TestK8sJobResumesOnTheVolume(t *testing.T) {
	pvc, job, _ := k8sExample(t)
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit < 1 {
		t.Errorf("backoffLimit %v, want one of at least 1", job.Spec.BackoffLimit)
	}
	c := pod.Containers[0]
	argv := append(slices.Clone(c.Command), c.Args...)
	if len(argv) < 2 || filepath.Base(argv[0]) != "runr" || argv[1] != "run" {
		t.Fatalf("the container runs %q, want runr run", argv)
	}
	i := slices.Index(argv, "--run-id")
	if i < 0 || i+1 >= len(argv) || strings.HasPrefix(argv[i+1], "-") || argv[i+1] == "" {
		t.Fatalf("the command %q has no --run-id NAME", argv)
	}
	// The id must be one runr accepts: in an empty store, runr status
	// reports it as not found (66), where an id it refuses is 64.
	cmd := exec.Command(runrBinFor(t), "--home", t.TempDir(), "status", argv[i+1])
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 66 {
		t.Errorf("runr status %s in an empty store: %v, want run_not_found (66), so the id is one runr takes:\n%s", argv[i+1], err, out)
	}

	home := ""
	for _, e := range c.Env {
		if e.Name == "RUNR_HOME" {
			home = e.Value
		}
	}
	if j := slices.Index(argv, "--home"); j >= 0 && j+1 < len(argv) {
		home = argv[j+1]
	}
	if home == "" || !filepath.IsAbs(home) {
		t.Fatalf("the run store is not set to an absolute path (RUNR_HOME or --home): %q", home)
	}
	onClaim := false
	for _, m := range c.VolumeMounts {
		if home != m.MountPath && !strings.HasPrefix(home, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
				onClaim = true
			}
		}
	}
	if !onClaim {
		t.Errorf("the run store %s is not on a volume of the claim %q", home, pvc.Name)
	}
}

// runrBinFor returns the path of the built runr.
func runrBinFor(t *testing.T) string {
	runr(t, "version")
	return runrBin
}

// TestGitLabRetryCodes: the GitLab CI job retries on exactly the
// registry's auto-resumable exit codes, runs runr with --run-id, and keeps
// the run's report.md and stop.json.
func TestGitLabRetryCodes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs/examples/gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var jobs map[string]struct {
		Image     string            `json:"image"`
		Tags      []string          `json:"tags"`
		Variables map[string]string `json:"variables"`
		Retry     struct {
			Max       int     `json:"max"`
			ExitCodes []int32 `json:"exit_codes"`
		} `json:"retry"`
		Timeout      string   `json:"timeout"`
		BeforeScript []string `json:"before_script"`
		Script       []string `json:"script"`
		AfterScript  []string `json:"after_script"`
		Artifacts    struct {
			When  string   `json:"when"`
			Paths []string `json:"paths"`
		} `json:"artifacts"`
	}
	if err := yaml.UnmarshalStrict(data, &jobs); err != nil {
		t.Fatalf("gitlab-ci.yml: %v", err)
	}
	job, ok := jobs["agent"]
	if !ok || len(jobs) != 1 {
		t.Fatalf("gitlab-ci.yml should hold the one job 'agent', has %d", len(jobs))
	}
	codes := slices.Sorted(slices.Values(job.Retry.ExitCodes))
	if want := autoResumableCodes(t); !slices.Equal(codes, want) {
		t.Errorf("retry:exit_codes %v, the registry's auto-resumable codes are %v", codes, want)
	}
	if job.Retry.Max < 1 || job.Retry.Max > 2 {
		t.Errorf("retry:max %d, GitLab takes 0 to 2", job.Retry.Max)
	}
	script := strings.Join(job.Script, "\n")
	if !strings.Contains(script, "runr run --run-id ") {
		t.Errorf("the script does not run 'runr run --run-id ...':\n%s", script)
	}
	after := strings.Join(job.AfterScript, "\n")
	for _, f := range []string{"report.md", "stop.json"} {
		if !strings.Contains(after, f) {
			t.Errorf("after_script does not keep the run's %s", f)
		}
	}
	if job.Artifacts.When != "always" || len(job.Artifacts.Paths) == 0 {
		t.Errorf("artifacts %+v: want when: always and a path", job.Artifacts)
	}
}

// TestCIDocQuotesExamples: docs/ci.md quotes each example whole, as the
// file is, so the documented and the tested text are the same.
func TestCIDocQuotesExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gitlab-ci.yml", "k8s-job.yaml", "k8s-indexed-job.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "docs/examples", name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```yaml\n"+string(data)+"```\n") {
			t.Errorf("docs/ci.md does not quote docs/examples/%s as it is, in a yaml block", name)
		}
	}
}

// indexedExample returns the documents of docs/examples/k8s-indexed-job.yaml:
// the PersistentVolumeClaim and the Indexed Job, each decoded strictly.
func indexedExample(t *testing.T) (*corev1.PersistentVolumeClaim, *batchv1.Job, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs/examples/k8s-indexed-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("k8s-indexed-job.yaml has %d documents, want 2 (the claim, the Job)", len(docs))
	}
	var pvc corev1.PersistentVolumeClaim
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &pvc); err != nil {
		t.Fatalf("the PersistentVolumeClaim: %v", err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &job); err != nil {
		t.Fatalf("the Job: %v", err)
	}
	if pvc.Kind != "PersistentVolumeClaim" || job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("documents are %s and %s %s, want a PersistentVolumeClaim and a batch/v1 Job", pvc.Kind, job.APIVersion, job.Kind)
	}
	return &pvc, &job, data
}

// TestK8sPoliciesAreGenerated: each example's podFailurePolicy is what its
// `runr reasons` format prints now, comments and all, and decodes to the
// same value.
func TestK8sPoliciesAreGenerated(t *testing.T) {
	_, indexed, indexedData := indexedExample(t)
	_, job, jobData := k8sExample(t)
	for _, tc := range []struct {
		format string
		job    *batchv1.Job
		data   []byte
		file   string
	}{
		{"k8s-pod-failure-policy", job, jobData, "k8s-job.yaml"},
		{"k8s-pod-failure-policy-indexed", indexed, indexedData, "k8s-indexed-job.yaml"},
	} {
		generated := runr(t, "reasons", "--format", tc.format)
		var spec batchv1.JobSpec
		if err := yaml.UnmarshalStrict(generated, &spec); err != nil {
			t.Fatalf("%s does not decode into a batch/v1 JobSpec: %v", tc.format, err)
		}
		if spec.PodFailurePolicy == nil || !reflect.DeepEqual(tc.job.Spec.PodFailurePolicy, spec.PodFailurePolicy) {
			t.Errorf("%s: the podFailurePolicy differs from runr's --format %s", tc.file, tc.format)
		}
		var indented strings.Builder
		for line := range strings.Lines(string(generated)) {
			indented.WriteString("  " + line)
		}
		if !strings.Contains(string(tc.data), indented.String()) {
			t.Errorf("docs/examples/%s does not hold the output of 'runr reasons --format %s' indented by two spaces", tc.file, tc.format)
		}
	}
}

// policyAction is what Kubernetes does with a failed pod under p: the
// action of the first rule that matches the container's exit code or one
// of the pod's conditions, "" when none does (Kubernetes then counts the
// failure against the backoff limit, as Count does).
func policyAction(p *batchv1.PodFailurePolicy, container string, exit int32, conditions []corev1.PodCondition) batchv1.PodFailurePolicyAction {
	for _, rule := range p.Rules {
		if ec := rule.OnExitCodes; ec != nil && exit != 0 && (ec.ContainerName == nil || *ec.ContainerName == container) {
			in := slices.Contains(ec.Values, exit)
			if (ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) == in {
				return rule.Action
			}
		}
		for _, want := range rule.OnPodConditions {
			for _, c := range conditions {
				if c.Type == want.Type && c.Status == want.Status {
					return rule.Action
				}
			}
		}
	}
	return ""
}

// TestK8sPoliciesActOnEveryExitCode walks every exit code of the registry
// through both examples' policies: a success is no failure, an
// auto-resumable code is counted (a new pod resumes the run), every other
// code fails the Job, or the index of an Indexed Job. A pod with the
// DisruptionTarget condition is ignored whatever its code, and a SIGKILL
// (137, in no rule) gets Kubernetes's default.
func TestK8sPoliciesActOnEveryExitCode(t *testing.T) {
	var reasons []struct {
		Code          string `json:"code"`
		ExitCode      int32  `json:"exit_code"`
		AutoResumable bool   `json:"auto_resumable"`
	}
	if err := json.Unmarshal(runr(t, "reasons", "--format", "json"), &reasons); err != nil {
		t.Fatal(err)
	}
	_, job, _ := k8sExample(t)
	_, indexed, _ := indexedExample(t)
	disrupted := []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		fail batchv1.PodFailurePolicyAction
	}{
		{"job", job, batchv1.PodFailurePolicyActionFailJob},
		{"indexed", indexed, batchv1.PodFailurePolicyActionFailIndex},
	} {
		p := tc.job.Spec.PodFailurePolicy
		container := tc.job.Spec.Template.Spec.Containers[0].Name
		for _, r := range reasons {
			want := tc.fail
			switch {
			case r.ExitCode == 0:
				want = ""
			case r.AutoResumable:
				want = batchv1.PodFailurePolicyActionCount
			}
			if got := policyAction(p, container, r.ExitCode, nil); got != want {
				t.Errorf("%s: exit %d (%s, auto_resumable %v) gets %q, want %q", tc.name, r.ExitCode, r.Code, r.AutoResumable, got, want)
			}
			if r.ExitCode != 0 {
				if got := policyAction(p, container, r.ExitCode, disrupted); got != batchv1.PodFailurePolicyActionIgnore {
					t.Errorf("%s: exit %d of a disrupted pod gets %q, want Ignore", tc.name, r.ExitCode, got)
				}
			}
		}
		if got := policyAction(p, container, 137, nil); got != "" {
			t.Errorf("%s: exit 137 (SIGKILL) gets %q, want no rule (Kubernetes's default, Count)", tc.name, got)
		}
	}
}

// TestK8sIndexedJobIsABatch: one task per completion index, the run id and
// the run store built from the index (so a replaced pod resumes its
// index's run, and each index has a store of its own on the claim), a
// per-index backoff limit, restartPolicy Never.
func TestK8sIndexedJobIsABatch(t *testing.T) {
	pvc, job, _ := indexedExample(t)
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", spec.CompletionMode)
	}
	if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex < 1 {
		t.Errorf("backoffLimitPerIndex %v, want one of at least 1", spec.BackoffLimitPerIndex)
	}
	if spec.Completions == nil || *spec.Completions < 2 {
		t.Errorf("completions %v: a batch has several tasks", spec.Completions)
	}
	pod := spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("the claim's access modes %v: the indexes' pods run at once, it needs ReadWriteMany", pvc.Spec.AccessModes)
	}
	c := pod.Containers[0]
	const index = "$(JOB_COMPLETION_INDEX)"
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	ie, ok := env["JOB_COMPLETION_INDEX"]
	if !ok || ie.ValueFrom == nil || ie.ValueFrom.FieldRef == nil ||
		ie.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("JOB_COMPLETION_INDEX is not set from the pod's completion index annotation: %+v", ie)
	}
	argv := append(slices.Clone(c.Command), c.Args...)
	if len(argv) < 2 || argv[0] != "runr" || argv[1] != "run" {
		t.Fatalf("the container runs %q, want runr run", argv)
	}
	flag := func(name string) string {
		i := slices.Index(argv, name)
		if i < 0 || i+1 >= len(argv) {
			t.Fatalf("the command %q has no %s", argv, name)
		}
		return argv[i+1]
	}
	for _, f := range []string{"--run-id", "--task"} {
		if !strings.Contains(flag(f), index) {
			t.Errorf("%s %s is not built from %s", f, flag(f), index)
		}
	}
	// The run id runr would see for index 3 is one it takes.
	id := strings.ReplaceAll(flag("--run-id"), index, "3")
	out, err := exec.Command(runrBinFor(t), "--home", t.TempDir(), "status", id).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 66 {
		t.Errorf("runr status %s in an empty store: %v, want run_not_found (66):\n%s", id, err, out)
	}
	home := env["RUNR_HOME"].Value
	if !strings.Contains(home, index) || !strings.HasPrefix(home, "/state/") {
		t.Errorf("RUNR_HOME %q: want a store per index on the claim's volume, under /state", home)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/state" || pod.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("/state is not the claim %s's volume", pvc.Name)
	}
}
