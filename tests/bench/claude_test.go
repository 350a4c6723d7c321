package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runr-dev/runr/tests/testenv"
)

const (
	claudeRounds     = 5
	claudeMilestones = 3
)

// claudeArgv is how runr calls the CLI (internal/agents/claude.go), the
// prompt on stdin: the bare loop calls it the same way.
var claudeArgv = []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions"}

// stepWriter scripts a model that, asked for a milestone, writes the next
// step file with the Write tool and then signals completion.
func stepWriter(repo string) func(testenv.APIRequest) testenv.APIReply {
	step := 0
	return func(req testenv.APIRequest) testenv.APIReply {
		switch {
		case !req.HasTool("Write"):
			// A side request of the CLI (a title, a summary).
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "steps"}}}
		case req.ToolResults() == 0:
			step++
			return testenv.APIReply{Blocks: []testenv.APIBlock{
				{Text: "I will write the step file."},
				{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(repo, fmt.Sprintf("step-%d.txt", step)), "content": "done\n"}},
			}}
		default:
			return testenv.APIReply{Blocks: []testenv.APIBlock{{Text: "Wrote the step file.\n<promise>COMPLETE</promise>"}}}
		}
	}
}

func (b *bench) claude(t *testing.T) {
	cli, err := exec.LookPath("claude")
	if err != nil {
		t.Fatal("the Claude Code CLI is not on PATH: `make bench` installs it into .cache/agents")
	}
	if out, err := exec.Command(cli, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "Claude Code") {
		t.Fatalf("%s is not the Claude Code CLI (%v): %s", cli, err, out)
	}
	version, _ := exec.Command(cli, "--version").Output()
	env := func(home string, api *testenv.MessagesAPI) []string {
		return b.env(home,
			"PATH="+filepath.Dir(cli)+string(os.PathListSeparator)+os.Getenv("PATH"),
			"ANTHROPIC_BASE_URL="+api.URL(),
			"ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
			"CLAUDE_CODE_MAX_RETRIES=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1",
			"IS_SANDBOX=1", // runs as root are refused bypassPermissions without it
		)
	}
	steps := func(t *testing.T, repo string) {
		t.Helper()
		for i := 1; i <= claudeMilestones; i++ {
			if _, err := os.Stat(filepath.Join(repo, fmt.Sprintf("step-%d.txt", i))); err != nil {
				t.Fatalf("the model's step %d was not written: %v", i, err)
			}
		}
	}

	var prompts [][]byte
	runrOnce := func() time.Duration {
		repo, home := b.repo(t)
		task := filepath.Join(filepath.Dir(repo), "task.md")
		writeFile(t, task, milestones(claudeMilestones), 0o644)
		api := testenv.NewMessagesAPI(t, stepWriter(repo))
		p := run(t, repo, env(home, api), nil, b.runr, "run", "--agent", "claude", "--task", task, "--quiet")
		api.Check(t)
		mustExit(t, p, 0, "runr --agent claude")
		steps(t, repo)
		if prompts == nil {
			ps, _ := filepath.Glob(filepath.Join(runDir(t, repo), "prompts", "*"))
			slices.Sort(ps)
			for _, f := range ps {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				prompts = append(prompts, data)
			}
		}
		return p.wall
	}
	// The bare loop: the CLI once per milestone, with runr's prompts when
	// the run kept them, else the milestone's goal.
	loopOnce := func() time.Duration {
		repo, home := b.repo(t)
		api := testenv.NewMessagesAPI(t, stepWriter(repo))
		d := filepath.Dir(repo)
		for i := 1; i <= claudeMilestones; i++ {
			prompt := fmt.Appendf(nil, "step %d", i)
			if len(prompts) == claudeMilestones {
				prompt = prompts[i-1]
			}
			writeFile(t, filepath.Join(d, fmt.Sprintf("prompt-%d", i)), prompt, 0o644)
		}
		script := fmt.Sprintf(`i=1; while [ $i -le %d ]; do claude %s < %s/prompt-$i > %s/log-$i 2>&1 || exit 1; i=$((i+1)); done`,
			claudeMilestones, strings.Join(claudeArgv, " "), shellQuote(d), shellQuote(d))
		p := run(t, repo, env(home, api), nil, "sh", "-c", script)
		api.Check(t)
		mustExit(t, p, 0, "the bare claude loop")
		steps(t, repo)
		return p.wall
	}

	// One round untimed: the CLI's binary comes into the page cache, and
	// runr's prompts are taken for the loop.
	runrOnce()
	loopOnce()
	var runrs, loops []time.Duration
	for range claudeRounds {
		runrs = append(runrs, runrOnce())
		loops = append(loops, loopOnce())
	}
	r, l := median(runrs), median(loops)
	ratio := float64(r) / float64(l)
	report(t, row{
		Figure:   fmt.Sprintf("real Claude Code CLI (%s), 3-milestone task, scripted local API, vs a bare loop calling it 3 times", strings.TrimSuffix(strings.TrimSpace(string(version)), " (Claude Code)")),
		Runr:     spread(runrs),
		Baseline: spread(loops),
		Ratio:    fmt.Sprintf("%.3fx", ratio),
		Target:   "≤ 1.03x",
		Met:      ratio <= 1.03,
	})
}
