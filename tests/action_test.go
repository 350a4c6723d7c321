package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// action is action.yml as this test reads it.
type action struct {
	Inputs map[string]struct {
		Description string `yaml:"description"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	Name             string            `yaml:"name"`
	ID               string            `yaml:"id"`
	If               string            `yaml:"if"`
	Uses             string            `yaml:"uses"`
	Shell            string            `yaml:"shell"`
	Run              string            `yaml:"run"`
	WorkingDirectory string            `yaml:"working-directory"`
	Env              map[string]string `yaml:"env"`
}

func readAction(t *testing.T) *action {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "action.yml"))
	require.NoError(t, err)
	var a action
	require.NoError(t, yaml.Unmarshal(data, &a))
	require.Equal(t, "composite", a.Runs.Using)
	return &a
}

// runner plays GitHub's runner for action.yml's `run:` steps, with its
// variables (GITHUB_OUTPUT and GITHUB_STEP_SUMMARY per step, RUNNER_TEMP,
// GITHUB_WORKSPACE, GITHUB_ACTIONS=true) and its bash. The `uses:` steps
// (setup-go, the cache, the artifact upload) are GitHub's own actions and
// are not run here.
type runner struct {
	t       *testing.T
	a       *action
	inputs  map[string]string
	env     []string // the job's environment
	work    string   // GITHUB_WORKSPACE
	temp    string   // RUNNER_TEMP
	outputs map[string]map[string]string
	summary strings.Builder
	logs    strings.Builder // every step's stdout and stderr
	exit    int             // the last step's exit code
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// eval substitutes the expressions action.yml uses; any other is an error
// of the test, so that a new one is not silently empty.
func (r *runner) eval(s string) string {
	return expression.ReplaceAllStringFunc(s, func(m string) string {
		e := expression.FindStringSubmatch(m)[1]
		parts := strings.Split(e, ".")
		switch {
		case len(parts) == 2 && parts[0] == "inputs":
			v, ok := r.inputs[parts[1]]
			if !ok {
				in, known := r.a.Inputs[parts[1]]
				require.True(r.t, known, "action.yml names an input it does not declare: %s", e)
				v = in.Default
			}
			return v
		case e == "github.action_path":
			return repoRoot()
		case e == "runner.temp":
			return r.temp
		case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
			return r.outputs[parts[1]][parts[3]]
		}
		r.t.Fatalf("the test does not know the expression %q of action.yml", e)
		return ""
	})
}

// step runs one `run:` step as the runner does: bash -e -o pipefail, in
// its working directory, with its env evaluated, and reads its outputs.
func (r *runner) step(s actionStep) {
	t := r.t
	require.Equal(t, "bash", s.Shell, s.Name)
	require.Empty(t, s.If, "%s: a run step runs whatever came before; this test runs each", s.Name)
	dir := r.work
	if s.WorkingDirectory != "" {
		dir = r.eval(s.WorkingDirectory)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(r.work, dir)
		}
	}
	out := filepath.Join(r.temp, "_output_"+s.ID)
	summary := filepath.Join(r.temp, "_summary")
	require.NoError(t, os.WriteFile(out, nil, 0o644))
	require.NoError(t, os.WriteFile(summary, nil, 0o644))
	script := filepath.Join(r.temp, "_step.sh")
	require.NoError(t, os.WriteFile(script, []byte(s.Run), 0o644))
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, r.env...), "GITHUB_OUTPUT="+out, "GITHUB_STEP_SUMMARY="+summary)
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+r.eval(v))
	}
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	err := cmd.Run()
	r.exit = 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", s.Name, err)
	}
	fmt.Fprintf(&r.logs, "## %s (exit %d)\n%s", s.Name, r.exit, log.String())
	if s.ID != "" {
		r.outputs[s.ID] = readGitHubOutput(t, out)
	}
	b, err := os.ReadFile(summary)
	require.NoError(t, err)
	r.summary.Write(b)
}

// readGitHubOutput reads a GITHUB_OUTPUT file as the runner does: name=value
// lines and name<<DELIMITER blocks; a later value wins.
func readGitHubOutput(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var v []string
			for sc.Scan() && sc.Text() != delim {
				v = append(v, sc.Text())
			}
			out[name] = strings.Join(v, "\n")
			continue
		}
		name, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "a line of GITHUB_OUTPUT that is no output: %q", line)
		out[name] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// runSteps runs every `run:` step of action.yml but the build of runr,
// whose binary the test copies into RUNNER_TEMP instead, and returns the
// action's outputs.
func (r *runner) runSteps() map[string]string {
	for _, s := range r.a.Runs.Steps {
		if s.Uses != "" || s.Name == "Build runr" {
			continue
		}
		r.step(s)
	}
	outs := map[string]string{}
	for name, o := range r.a.Outputs {
		outs[name] = r.eval(o.Value)
	}
	return outs
}

// The secrets the job's environment holds: none may reach the log, the
// outputs or the summary.
var actionSecrets = map[string]string{
	"GH_TOKEN":          "gh-secret-6d1f",
	"GITHUB_TOKEN":      "github-secret-93ab",
	"ANTHROPIC_API_KEY": "anthropic-secret-0c7e",
}

// newRunner makes a remote (a bare repository at GITHUB_SERVER_URL/
// GITHUB_REPOSITORY.git) holding TASK.md, a checkout of it as the
// workspace, and the runner around them; runr, already built, is copied
// into RUNNER_TEMP.
func newRunner(t *testing.T, a *action, runrBin string, inputs map[string]string, env ...string) *runner {
	tmp := t.TempDir()
	server := filepath.Join(tmp, "server")
	remote := filepath.Join(server, "owner", "repo.git")
	seed := filepath.Join(tmp, "seed")
	work := filepath.Join(tmp, "work", "repo")
	temp := filepath.Join(tmp, "runner-temp")
	stand := filepath.Join(tmp, "stand-ins")
	for _, d := range []string{seed, temp, stand} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(seed, "TASK.md"), []byte("# Add the greetings\n\n- [ ] write one.txt\n- [ ] write two.txt\n"), 0o644))
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = testEnv(tmp)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git(tmp, "init", "-q", "--bare", "-b", "main", remote)
	git(seed, "init", "-q", "-b", "main")
	git(seed, "add", "-A")
	git(seed, "commit", "-q", "-m", "the task")
	git(seed, "push", "-q", remote, "main")
	git(tmp, "clone", "-q", remote, work)
	// What an agent could leave in the checkout: a hook that would run on
	// any push made from it.
	marker := filepath.Join(tmp, "hook-ran")
	require.NoError(t, os.WriteFile(filepath.Join(work, ".git", "hooks", "pre-push"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	t.Cleanup(func() { assert.NoFileExists(t, marker, "a hook of the checkout ran") })

	bin, err := os.ReadFile(runrBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(temp, "runr"), bin, 0o755))
	// Stand-ins that record their calls: gh (GitHub is out of reach from a
	// test, so pull requests are checked by what gh is asked to do) and npm
	// (the registry too).
	gh := `#!/bin/sh
# A recording stand-in for GitHub's gh: GitHub is out of reach in tests.
{ printf 'gh'; for a in "$@"; do printf '\t%s' "$a"; done; printf '\ttoken=%s\n' "${GH_TOKEN:+set}"; } >> "$STANDIN_LOG"
case "$1 $2" in
"pr list") ;;
"pr create")
	while [ $# -gt 0 ]; do if [ "$1" = --body-file ]; then cp "$2" "$STANDIN_LOG.body"; fi; shift; done
	echo https://github.example/owner/repo/pull/7 ;;
esac
`
	require.NoError(t, os.WriteFile(filepath.Join(stand, "gh"), []byte(gh), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stand, "npm"), []byte(npmStandIn), 0o755))

	r := &runner{t: t, a: a, inputs: inputs, work: work, temp: temp, outputs: map[string]map[string]string{}}
	r.env = append(testEnv(work), "PATH="+stand+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GITHUB_ACTIONS=true", "GITHUB_WORKSPACE="+work, "RUNNER_TEMP="+temp,
		"GITHUB_SERVER_URL=file://"+server, "GITHUB_REPOSITORY=owner/repo", "GITHUB_REF_NAME=main",
		"STANDIN_LOG="+filepath.Join(tmp, "standins.log"))
	for k, v := range actionSecrets {
		r.env = append(r.env, k+"="+v)
	}
	r.env = append(r.env, env...)
	return r
}

// npmStandIn records its calls: the npm registry is out of reach in tests.
const npmStandIn = `#!/bin/sh
# A recording stand-in for npm: the registry is out of reach in tests.
{ printf 'npm'; for a in "$@"; do printf '\t%s' "$a"; done; printf '\n'; } >> "$STANDIN_LOG"
`

// standins is what the stand-ins were asked, one call a line.
func (r *runner) standins() string {
	b, _ := os.ReadFile(r.getenv("STANDIN_LOG"))
	return string(b)
}

func (r *runner) getenv(k string) string {
	for i := len(r.env) - 1; i >= 0; i-- {
		if name, v, _ := strings.Cut(r.env[i], "="); name == k {
			return v
		}
	}
	return ""
}

func (r *runner) git(args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.work
	cmd.Env = testEnv(r.work)
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// noSecrets: no secret of the environment is in the steps' output, the
// action's outputs or the summary.
func (r *runner) noSecrets(outs map[string]string) {
	all := r.logs.String() + r.summary.String() + fmt.Sprint(outs)
	for k, v := range actionSecrets {
		assert.NotContains(r.t, all, v, "%s leaked", k)
	}
}

// TestActionEndToEnd runs action.yml's own `run:` steps, read from the file,
// as GitHub's runner would (its `uses:` steps are GitHub's actions and are
// not run), with a command agent, against a real git remote: deliver
// branch pushes exactly the run's verified commits, deliver pr also asks gh
// (a recording stand-in: GitHub is out of reach) for a pull request with
// the task's title and the run's report, a draft when the run did not
// complete, and deliver patch writes a series `git am` applies to the base.
func TestActionEndToEnd(t *testing.T) {
	t.Parallel()
	a := readAction(t)
	// The build step is not run: it is `go build` at the action's ref, and
	// the runr TestMain built from this checkout is that binary.
	var build actionStep
	for _, s := range a.Runs.Steps {
		if s.Name == "Build runr" {
			build = s
		}
	}
	require.Equal(t, `go build -o "$RUNNER_TEMP/runr" ./cmd/runr`, strings.TrimSpace(build.Run))
	require.Equal(t, "${{ github.action_path }}", build.WorkingDirectory)
	runrBin := filepath.Join(binDir, "runr")

	agent := "fakeagent\n--do\nm1: write one.txt 1\n--do\nm2: write two.txt 2\n--do\nstatus done\n"
	base := map[string]string{"task": "TASK.md", "agent": "command", "command": agent, "verify": "test -f one.txt\n\ntest ! -f bad.txt", "time": "5m"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	t.Run("branch", func(t *testing.T) {
		t.Parallel()
		r := newRunner(t, a, runrBin, with("deliver", "branch", "run-id", "ci-1"))
		outs := r.runSteps()
		require.Equal(t, 0, r.exit, r.logs.String())
		assert.Equal(t, "ci-1", outs["run_id"])
		assert.Equal(t, "complete", outs["stop_reason"])
		assert.Equal(t, "0", outs["exit_code"])
		assert.NotEmpty(t, outs["cost_usd"])
		assert.Equal(t, "runr/ci-1", outs["branch"])
		assert.Empty(t, outs["pr_url"])
		assert.Empty(t, outs["patch"])
		// The remote branch is the run's last checkpoint commit, on top of
		// main: the two verified milestones and nothing else.
		st := runState(t, r.work)
		remote := filepath.Join(strings.TrimPrefix(r.getenv("GITHUB_SERVER_URL"), "file://"), "owner", "repo.git")
		pushed := r.git("--git-dir", remote, "rev-parse", "refs/heads/runr/ci-1")
		assert.Equal(t, st.Milestones[1].Commit, pushed)
		assert.Equal(t, r.git("rev-parse", "runr/ci-1"), pushed)
		assert.Equal(t, "2", r.git("--git-dir", remote, "rev-list", "--count", "main..runr/ci-1"))
		assert.Equal(t, "1", r.git("--git-dir", remote, "show", "runr/ci-1:one.txt"))
		assert.Contains(t, r.summary.String(), "ci-1", "runr's report is in the summary")
		assert.Contains(t, r.summary.String(), "runr: pushed runr/ci-1")
		assert.NotContains(t, r.standins(), "gh\t", "deliver branch opens no pull request")
		assert.NotContains(t, r.standins(), "npm\t", "a command agent installs nothing")
		r.noSecrets(outs)
	})

	t.Run("pr of a run that stopped", func(t *testing.T) {
		t.Parallel()
		// Milestone 2 writes bad.txt, which verify refuses: the run stops
		// after milestone 1, whose commit is pushed; the pull request is a
		// draft, and the job fails with runr's code.
		bad := "fakeagent\n--do\nm1: write one.txt 1\n--do\nm2: write bad.txt x\n--do\nstatus done\n"
		r := newRunner(t, a, runrBin, with("deliver", "pr", "command", bad), "RUNR_STOP_MAX_MILESTONE_RETRIES=0")
		outs := r.runSteps()
		require.NotEqual(t, 0, r.exit, r.logs.String())
		assert.Equal(t, fmt.Sprint(r.exit), outs["exit_code"], "the job fails with runr's code")
		assert.NotEqual(t, "complete", outs["stop_reason"])
		id := outs["run_id"]
		require.NotEmpty(t, id)
		assert.Equal(t, "runr/"+id, outs["branch"])
		assert.Equal(t, "https://github.example/owner/repo/pull/7", outs["pr_url"])
		remote := filepath.Join(strings.TrimPrefix(r.getenv("GITHUB_SERVER_URL"), "file://"), "owner", "repo.git")
		assert.Equal(t, "1", r.git("--git-dir", remote, "rev-list", "--count", "main..runr/"+id), "only the verified milestone")

		calls := strings.Split(strings.TrimSpace(r.standins()), "\n")
		require.Len(t, calls, 2, r.standins())
		assert.Equal(t, "gh\tpr\tlist\t--repo\towner/repo\t--head\trunr/"+id+"\t--state\topen\t--json\turl\t--jq\t.[0].url // \"\"\ttoken=set", calls[0])
		create := strings.Split(calls[1], "\t")
		assert.Equal(t, []string{"gh", "pr", "create", "--repo", "owner/repo", "--head", "runr/" + id, "--title", "Add the greetings", "--body-file"}, create[:10])
		assert.Equal(t, []string{"--base", "main", "--draft", "token=set"}, create[11:])
		report, err := os.ReadFile(filepath.Join(r.work, ".git", "runr", "runs", id, "report.md"))
		require.NoError(t, err)
		body, err := os.ReadFile(r.getenv("STANDIN_LOG") + ".body")
		require.NoError(t, err)
		assert.Equal(t, string(report), string(body), "the body is the run's report")
		assert.Contains(t, r.summary.String(), "runr: pull request https://github.example/owner/repo/pull/7")
		r.noSecrets(outs)
	})

	t.Run("patch", func(t *testing.T) {
		t.Parallel()
		r := newRunner(t, a, runrBin, with("deliver", "patch"))
		outs := r.runSteps()
		require.Equal(t, 0, r.exit, r.logs.String())
		id := outs["run_id"]
		require.NotEmpty(t, id)
		assert.Empty(t, outs["branch"])
		require.NotEmpty(t, outs["patch"])
		assert.Equal(t, filepath.Join(r.temp, "runr-"+id, id+".patch"), outs["patch"])
		// The artifact holds the run's store, which runr report reads.
		code, rep, stderr := runrOut(t, t.TempDir(), "report", "--format", "csv", "--store", filepath.Join(r.temp, "runr-"+id, "store"))
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, rep, "\nall,1,1,complete:1,2,2,", "the report of the run in the artifact")
		// The series applies to the base and gives the run's branch.
		clean := filepath.Join(t.TempDir(), "clean")
		r.git("clone", "-q", filepath.Join(strings.TrimPrefix(r.getenv("GITHUB_SERVER_URL"), "file://"), "owner", "repo.git"), clean)
		r.git("-C", clean, "am", "-q", outs["patch"])
		assert.Equal(t, r.git("rev-parse", "runr/"+id+"^{tree}"), r.git("-C", clean, "rev-parse", "HEAD^{tree}"))
		r.noSecrets(outs)
	})

	t.Run("re-run resumes from the cache", func(t *testing.T) {
		t.Parallel()
		// The first job's runr dies (SIGKILL) in milestone 2, after milestone
		// 1's checkpoint. The cache steps are GitHub's actions/cache: here
		// the checkout's .git is kept and put back as they do, into a fresh
		// clone at the same path (a new runner). The re-run resumes run ci-2
		// and delivers both milestones.
		once := filepath.Join(t.TempDir(), "crashed")
		script := "cat >/dev/null\n" +
			"if [ \"$RUNR_MILESTONE\" = 2 ] && [ ! -f " + once + " ]; then touch " + once + "; kill -9 $PPID; exit 1; fi\n" +
			"echo \"$RUNR_MILESTONE\" > \"m$RUNR_MILESTONE.txt\"\necho RUNR_STATUS: done\n"
		agentFile := filepath.Join(t.TempDir(), "agent.sh")
		require.NoError(t, os.WriteFile(agentFile, []byte(script), 0o644))
		in := with("deliver", "branch", "run-id", "ci-2", "command", "sh\n"+agentFile, "verify", "true")
		r := newRunner(t, a, runrBin, in)
		outs := r.runSteps()
		require.NotEqual(t, 0, r.exit, "the first job's runr was killed: %s", r.logs.String())
		assert.Empty(t, outs["run_id"], "a killed runr writes no outputs")

		kept := filepath.Join(t.TempDir(), "git")
		out, err := exec.Command("cp", "-a", filepath.Join(r.work, ".git"), kept).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NoError(t, os.RemoveAll(r.work))
		remote := filepath.Join(strings.TrimPrefix(r.getenv("GITHUB_SERVER_URL"), "file://"), "owner", "repo.git")
		clone := exec.Command("git", "clone", "-q", remote, r.work)
		clone.Env = testEnv(t.TempDir())
		out, err = clone.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NoError(t, os.RemoveAll(filepath.Join(r.work, ".git")))
		out, err = exec.Command("cp", "-a", kept, filepath.Join(r.work, ".git")).CombinedOutput()
		require.NoError(t, err, "%s", out)

		r.summary.Reset()
		outs = r.runSteps()
		require.Equal(t, 0, r.exit, r.logs.String())
		assert.Equal(t, "ci-2", outs["run_id"])
		assert.Equal(t, "complete", outs["stop_reason"])
		assert.Equal(t, "runr/ci-2", outs["branch"])
		assert.Equal(t, "2", r.git("--git-dir", remote, "rev-list", "--count", "main..runr/ci-2"), "milestone 1 once, then milestone 2")
		assert.Equal(t, 1, strings.Count(r.git("-C", r.work, "log", "--format=%s", "runr/ci-2"), "milestone 1/2"))
	})

	t.Run("install", func(t *testing.T) {
		t.Parallel()
		// The install step alone: the pinned version of configs/agent-versions
		// (make test-agents reads the same file), or agent-version.
		var install actionStep
		for _, s := range a.Runs.Steps {
			if s.Name == "Install the agent's CLI" {
				install = s
			}
		}
		pins, err := os.ReadFile(filepath.Join(repoRoot(), "configs", "agent-versions"))
		require.NoError(t, err)
		makefile, err := os.ReadFile(filepath.Join(repoRoot(), "Makefile"))
		require.NoError(t, err)
		assert.Contains(t, string(makefile), "configs/agent-versions", "make test-agents pins the versions of the same file")
		claude := regexp.MustCompile(`(?m)^claude\s+(\S+)\s+(\S+)$`).FindStringSubmatch(string(pins))
		require.Len(t, claude, 3)
		for _, tc := range []struct {
			agent, version, want string
			exit                 int
		}{
			{"claude", "", "npm\tinstall\t-g\t--no-audit\t--no-fund\t" + claude[1] + "@" + claude[2], 0},
			{"qwen", "0.99.1", "npm\tinstall\t-g\t--no-audit\t--no-fund\t@qwen-code/qwen-code@0.99.1", 0},
			{"command", "", "", 0},
			{"cobol", "", "", 64},
		} {
			// No repository: the step reads only its inputs and the pins.
			dir := t.TempDir()
			stand := filepath.Join(dir, "stand-ins")
			require.NoError(t, os.Mkdir(stand, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(stand, "npm"), []byte(npmStandIn), 0o755))
			r := &runner{t: t, a: a, inputs: map[string]string{"agent": tc.agent, "agent-version": tc.version}, work: dir, temp: dir,
				outputs: map[string]map[string]string{}, env: append(testEnv(dir), "PATH="+stand+string(os.PathListSeparator)+os.Getenv("PATH"),
					"RUNNER_TEMP="+dir, "GITHUB_ACTIONS=true", "STANDIN_LOG="+filepath.Join(dir, "standins.log"))}
			r.step(install)
			assert.Equal(t, tc.exit, r.exit, "%s: %s", tc.agent, r.logs.String())
			assert.Equal(t, tc.want, strings.TrimSpace(r.standins()), tc.agent)
		}
	})
}

// TestCIDocWorkflows parses the YAML of docs/ci.md (the GitHub workflows,
// the GitLab job, the Kubernetes manifests): every input a workflow gives
// runr's action is one action.yml declares, and every runr command and flag
// a script or a container runs is one runr has.
func TestCIDocWorkflows(t *testing.T) {
	t.Parallel()
	a := readAction(t)
	doc, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "ci.md"))
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```\n").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, blocks)

	help := map[string]string{}
	checkRunr := func(where string, argv []string) {
		t.Helper()
		var sub string
		for _, a := range argv {
			if a == "--" {
				break
			}
			if sub == "" && !strings.HasPrefix(a, "-") {
				sub = a
				if _, ok := help[sub]; !ok {
					code, out, stderr := runrOut(t, t.TempDir(), sub, "--help")
					require.Equal(t, 0, code, "%s: runr %s: no such command: %s", where, sub, stderr)
					help[sub] = out
				}
				continue
			}
			if name, ok := strings.CutPrefix(a, "--"); ok {
				name, _, _ = strings.Cut(name, "=")
				global := []string{"home", "config", "no-color", "quiet", "json"}
				if !slices.Contains(global, name) {
					assert.Contains(t, help[sub], "--"+name+" ", "%s: runr %s has no flag --%s", where, sub, name)
				}
			}
		}
		assert.NotEmpty(t, sub, "%s: runr without a command", where)
	}
	// runrCommands finds the runr commands of a shell script, as argv.
	runrCommands := func(where, script string) {
		t.Helper()
		for _, line := range strings.Split(script, "\n") {
			for _, m := range regexp.MustCompile(`(?:^|[\s;&|(])runr((?:\s+(?:'[^']*'|"[^"]*"|[^\s;&|<>'"]+))+)`).FindAllStringSubmatch(line, -1) {
				var argv []string
				for _, w := range regexp.MustCompile(`'[^']*'|"[^"]*"|[^\s'"]+`).FindAllString(m[1], -1) {
					argv = append(argv, strings.Trim(w, `'"`))
				}
				checkRunr(where+": "+strings.TrimSpace(line), argv)
			}
		}
	}

	var workflows, gitlab, k8s int
	for i, b := range blocks {
		dec := yaml.NewDecoder(strings.NewReader(b[1]))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				require.ErrorIs(t, err, io.EOF, "yaml block %d of docs/ci.md", i+1)
				break
			}
			where := fmt.Sprintf("docs/ci.md yaml block %d", i+1)
			switch {
			case doc["jobs"] != nil:
				workflows++
				jobs, _ := doc["jobs"].(map[string]any)
				for name, j := range jobs {
					job, _ := j.(map[string]any)
					steps, _ := job["steps"].([]any)
					for _, st := range steps {
						step, _ := st.(map[string]any)
						if uses, _ := step["uses"].(string); strings.HasPrefix(uses, "runr-dev/runr@") {
							with, _ := step["with"].(map[string]any)
							for in := range with {
								assert.Contains(t, a.Inputs, in, "%s, job %s: the action has no input %q", where, name, in)
							}
						}
						if run, ok := step["run"].(string); ok {
							runrCommands(where+", job "+name, run)
						}
					}
				}
			case doc["kind"] != nil:
				k8s++
				var walk func(v any)
				walk = func(v any) {
					switch v := v.(type) {
					case map[string]any:
						if cmd, ok := v["command"].([]any); ok && len(cmd) > 0 && cmd[0] == "runr" {
							var argv []string
							for _, a := range append(cmd[1:], anySlice(v["args"])...) {
								argv = append(argv, fmt.Sprint(a))
							}
							checkRunr(where, argv)
						}
						for _, x := range v {
							walk(x)
						}
					case []any:
						for _, x := range v {
							walk(x)
						}
					}
				}
				walk(doc)
			default:
				gitlab++
				for name, j := range doc {
					job, _ := j.(map[string]any)
					for _, key := range []string{"before_script", "script", "after_script"} {
						for _, line := range anySlice(job[key]) {
							runrCommands(where+", job "+name, fmt.Sprint(line))
						}
					}
				}
			}
		}
	}
	assert.Equal(t, 2, workflows, "GitHub workflows: one task, and the matrix")
	assert.Equal(t, 1, gitlab, "the GitLab job")
	assert.Equal(t, 4, k8s, "the Job and the Indexed Job, each with its claim")
	assert.Contains(t, help, "report", "the batch workflow's report over the stores was checked")

	// The GitLab job installs the agent's CLI at the version runr is tested with.
	pins, err := os.ReadFile(filepath.Join(repoRoot(), "configs", "agent-versions"))
	require.NoError(t, err)
	claude := regexp.MustCompile(`(?m)^claude\s+\S+\s+(\S+)$`).FindStringSubmatch(string(pins))
	require.Len(t, claude, 2)
	assert.Contains(t, string(doc), `CLAUDE_CODE_VERSION: "`+claude[1]+`"`, "the GitLab job's pin is configs/agent-versions'")
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}
