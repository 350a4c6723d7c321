package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

const goodConfig = `agent:
  kind: command
  command: [git, status]
verify:
  commands:
    - git diff --quiet
    - "GOFLAGS=-count=1 git --version"
    - cd . && true
`

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// outsideGit keeps git from finding a repository above the test's temp dirs.
func outsideGit(t *testing.T) {
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(t.TempDir()))
}

// goodRepo is a git repository with one commit and a valid runr.yaml.
func goodRepo(t *testing.T) string {
	t.Helper()
	outsideGit(t)
	dir := t.TempDir()
	runGit(t, dir, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("shop\n"), 0o644))
	runGit(t, dir, "add", "README.md")
	runGit(t, dir, "commit", "-q", "-m", "initial")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runr.yaml"), []byte(goodConfig), 0o644))
	return dir
}

func envOptions(dir string) EnvOptions {
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNR_") {
			environ = append(environ, kv)
		}
	}
	return EnvOptions{
		Dir:              dir,
		Environ:          append(environ, "RUNR_TEST_API_KEY=sk-very-secret"),
		AgentProgram:     "git",
		AgentVersionArgs: []string{"--version"},
		CredentialEnv:    []string{"RUNR_TEST_API_KEY", "RUNR_TEST_OTHER_KEY"},
	}
}

func find(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	require.Failf(t, "check not made", "no %q among %+v", name, checks)
	return Check{}
}

func failed(checks []Check) []string {
	var out []string
	for _, c := range checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

func TestEnvironmentAllPass(t *testing.T) {
	dir := goodRepo(t)
	checks := CheckEnvironment(context.Background(), envOptions(dir))
	assert.Empty(t, failed(checks), "%+v", checks)
	assert.Equal(t, stopreasons.Complete, Verdict(checks))

	names := []string{}
	for _, c := range checks {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{CheckRunEnv, CheckGit, CheckStore, CheckConfig, CheckAgent, CheckCredentials, CheckVerify, CheckSandbox,
		CheckStaleLocks, CheckDeadClaims, CheckLeftoverTemps, CheckWorktrees}, names)

	assert.Equal(t, filepath.Join(canonical(dir), ".git", "runr"), canonical(find(t, checks, CheckStore).Detail))
	assert.Contains(t, find(t, checks, CheckAgent).Detail, "(git version ")
	assert.Equal(t, "git", find(t, checks, CheckVerify).Detail, "builtins and assignments skipped, each program once")

	cred := find(t, checks, CheckCredentials)
	assert.Equal(t, "RUNR_TEST_API_KEY present, RUNR_TEST_OTHER_KEY absent", cred.Detail)
	for _, c := range checks {
		assert.NotContains(t, c.Detail, "sk-very-secret", "a credential's value is never shown")
	}
}

func TestEnvironmentNotAGitRepository(t *testing.T) {
	outsideGit(t)
	dir := t.TempDir()
	checks := CheckEnvironment(context.Background(), envOptions(dir))
	git := find(t, checks, CheckGit)
	assert.False(t, git.OK)
	assert.Contains(t, git.Detail, "git checkout")
	assert.Equal(t, stopreasons.EnvironmentInvalid, git.Code)
	assert.Equal(t, []string{CheckGit}, failed(checks), "the store checks that need the repository are left out")
	assert.Equal(t, stopreasons.EnvironmentInvalid, Verdict(checks))
}

func TestEnvironmentStoreNotWritable(t *testing.T) {
	dir := goodRepo(t)
	// A regular file where the store should be: not writable even for root.
	home := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.WriteFile(home, []byte("not a directory"), 0o644))
	o := envOptions(dir)
	o.Home = home
	checks := CheckEnvironment(context.Background(), o)
	c := find(t, checks, CheckStore)
	assert.False(t, c.OK)
	assert.Contains(t, c.Detail, home)
	assert.Equal(t, []string{CheckStore}, failed(checks))
	assert.Equal(t, stopreasons.EnvironmentInvalid, Verdict(checks))
}

func TestEnvironmentInvalidConfig(t *testing.T) {
	dir := goodRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runr.yaml"), []byte("budget:\n  time: banana\n"), 0o644))
	checks := CheckEnvironment(context.Background(), envOptions(dir))
	c := find(t, checks, CheckConfig)
	assert.False(t, c.OK)
	assert.Equal(t, stopreasons.ConfigInvalid, c.Code)
	assert.Contains(t, c.Detail, "banana")
	assert.Contains(t, c.Detail, "runr.yaml")
	assert.Equal(t, stopreasons.ConfigInvalid, Verdict(checks))

	// Without a config there is no agent to look for: one failure, not two.
	o := envOptions(dir)
	o.AgentProgram = ""
	checks = CheckEnvironment(context.Background(), o)
	assert.Equal(t, []string{CheckConfig}, failed(checks))
}

func TestEnvironmentAgent(t *testing.T) {
	t.Run("program missing", func(t *testing.T) {
		dir := goodRepo(t)
		o := envOptions(dir)
		o.AgentProgram = "runr-test-no-such-agent"
		checks := CheckEnvironment(context.Background(), o)
		c := find(t, checks, CheckAgent)
		assert.False(t, c.OK)
		assert.Contains(t, c.Detail, "runr-test-no-such-agent: not found on PATH")
		assert.Equal(t, []string{CheckAgent}, failed(checks))
		assert.Equal(t, stopreasons.EnvironmentInvalid, Verdict(checks))
	})
	t.Run("version fails", func(t *testing.T) {
		dir := goodRepo(t)
		o := envOptions(dir)
		o.AgentProgram = fakeAgent(t, "echo 'broken install' >&2; exit 3\n")
		c := find(t, CheckEnvironment(context.Background(), o), CheckAgent)
		assert.False(t, c.OK)
		assert.Contains(t, c.Detail, "--version failed: exit status 3")
	})
	t.Run("taken from agent.command when not injected", func(t *testing.T) {
		dir := goodRepo(t)
		o := envOptions(dir)
		o.AgentProgram, o.AgentVersionArgs = "", nil
		c := find(t, CheckEnvironment(context.Background(), o), CheckAgent)
		assert.True(t, c.OK, c.Detail)
		assert.Equal(t, "git", filepath.Base(c.Detail))
	})
}

// fakeAgent writes an agent program that runs body, and returns its path.
func fakeAgent(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-agent")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755))
	return path
}

// TestEnvironmentAgentVersionHangs: an agent whose --version never returns
// (and ignores SIGTERM), or returns but leaves a child holding its output
// open, costs doctor its probe timeout and no more; the first is a failed
// check that says it timed out.
func TestEnvironmentAgentVersionHangs(t *testing.T) {
	const timeout = time.Second
	// The probe's kill grace (1s), and room for a loaded machine.
	const margin = 5 * time.Second
	dir := goodRepo(t)

	t.Run("never answers", func(t *testing.T) {
		o := envOptions(dir)
		o.AgentProgram = fakeAgent(t, "trap '' TERM\nwhile :; do sleep 1; done\n")
		o.VersionTimeout = timeout
		start := time.Now()
		c := find(t, CheckEnvironment(context.Background(), o), CheckAgent)
		took := time.Since(start)
		assert.False(t, c.OK)
		assert.Contains(t, c.Detail, "--version failed: timed out after 1s; check the installation")
		assert.Less(t, took, timeout+margin)
	})
	t.Run("a child keeps stdout open", func(t *testing.T) {
		o := envOptions(dir)
		o.AgentProgram = fakeAgent(t, "sleep 60 &\necho 'fake 1.0'\n")
		o.VersionTimeout = timeout
		start := time.Now()
		c := find(t, CheckEnvironment(context.Background(), o), CheckAgent)
		took := time.Since(start)
		assert.True(t, c.OK, c.Detail)
		assert.Equal(t, o.AgentProgram+" (fake 1.0)", c.Detail)
		assert.Less(t, took, timeout+margin)
	})
}

func TestEnvironmentVerifyProgramMissing(t *testing.T) {
	dir := goodRepo(t)
	cfg := "verify:\n  commands:\n    - runr-test-no-such-tool --flag\n    - FOO=1 ./scripts/check.sh\n    - git status\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runr.yaml"), []byte(cfg), 0o644))
	checks := CheckEnvironment(context.Background(), envOptions(dir))
	c := find(t, checks, CheckVerify)
	assert.False(t, c.OK)
	assert.Contains(t, c.Detail, `runr-test-no-such-tool (in "runr-test-no-such-tool --flag")`)
	assert.Contains(t, c.Detail, "./scripts/check.sh")
	assert.NotContains(t, c.Detail, "git (")

	// The script appears: relative paths are looked up in the repository root.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "check.sh"), []byte("#!/bin/sh\n"), 0o755))
	c = find(t, CheckEnvironment(context.Background(), envOptions(dir)), CheckVerify)
	assert.NotContains(t, c.Detail, "check.sh")
}

// storeWithRun makes the repository's store and one run in it whose state
// says running.
func storeWithRun(t *testing.T, dir string) (*state.Store, string) {
	t.Helper()
	common, err := guard.CommonDir(context.Background(), dir)
	require.NoError(t, err)
	s, err := state.Open(state.DefaultHome(common))
	require.NoError(t, err)
	id := state.NewRunID(time.Now())
	require.NoError(t, s.Create(&state.State{RunID: id, RunStatus: stopreasons.RunRunning, Phase: state.PhaseImplement}))
	return s, id
}

func TestEnvironmentStaleLockAndDeadClaim(t *testing.T) {
	dir := goodRepo(t)
	s, id := storeWithRun(t, dir)
	require.NoError(t, s.WriteClaim(state.Claim{RunID: id, Checkout: dir, PID: os.Getpid(), CreatedAt: time.Now()}))

	checks := CheckEnvironment(context.Background(), envOptions(dir))
	stale := find(t, checks, CheckStaleLocks)
	assert.False(t, stale.OK)
	assert.Contains(t, stale.Detail, "run "+id+" says running but no runr process holds it")
	assert.Contains(t, stale.Detail, "`runr resume "+id+"`")
	dead := find(t, checks, CheckDeadClaims)
	assert.False(t, dead.OK)
	assert.Contains(t, dead.Detail, id+".json: run "+id+" is not live")
	assert.Equal(t, stopreasons.EnvironmentInvalid, Verdict(checks))

	// Held by a live process: neither stale nor dead.
	lock, err := s.Acquire(id)
	require.NoError(t, err)
	defer lock.Release()
	checks = CheckEnvironment(context.Background(), envOptions(dir))
	assert.True(t, find(t, checks, CheckStaleLocks).OK)
	assert.True(t, find(t, checks, CheckDeadClaims).OK)
}

func TestEnvironmentLeftoverTemps(t *testing.T) {
	dir := goodRepo(t)
	s, id := storeWithRun(t, dir)
	require.NoError(t, s.Save(&state.State{RunID: id, RunStatus: stopreasons.RunStopped}))
	temp := filepath.Join(s.RunDir(id), ".tmp-state.json-123456")
	require.NoError(t, os.WriteFile(temp, []byte(`{"run_id":`), 0o644))

	checks := CheckEnvironment(context.Background(), envOptions(dir))
	c := find(t, checks, CheckLeftoverTemps)
	assert.False(t, c.OK)
	assert.Contains(t, c.Detail, temp)
	assert.Equal(t, []string{CheckLeftoverTemps}, failed(checks))
}

func TestEnvironmentOrphanWorktrees(t *testing.T) {
	dir := goodRepo(t)
	s, id := storeWithRun(t, dir)
	require.NoError(t, s.Save(&state.State{RunID: id, RunStatus: stopreasons.RunStopped}))
	wt := filepath.Join(s.Home, "worktrees")

	// A real worktree of a run that exists is fine.
	runGit(t, dir, "worktree", "add", "-q", "--detach", filepath.Join(wt, id))
	checks := CheckEnvironment(context.Background(), envOptions(dir))
	require.True(t, find(t, checks, CheckWorktrees).OK, find(t, checks, CheckWorktrees).Detail)

	// A worktree whose run is gone, and a directory git does not know.
	gone := "20200101T000000Z-aaaaaa"
	runGit(t, dir, "worktree", "add", "-q", "--detach", filepath.Join(wt, gone))
	s2, stray := storeWithRun(t, dir)
	require.NoError(t, s2.Save(&state.State{RunID: stray, RunStatus: stopreasons.RunStopped}))
	require.NoError(t, os.MkdirAll(filepath.Join(wt, stray), 0o755))

	c := find(t, CheckEnvironment(context.Background(), envOptions(dir)), CheckWorktrees)
	assert.False(t, c.OK)
	assert.Contains(t, c.Detail, "no run "+gone+" in the store; remove it with `git worktree remove --force")
	assert.Contains(t, c.Detail, filepath.Join(wt, stray)+": not a worktree git knows")
	assert.NotContains(t, c.Detail, filepath.Join(wt, id)+":")
}

func TestVerdict(t *testing.T) {
	ok := Check{Name: CheckGit, OK: true, Code: stopreasons.EnvironmentInvalid}
	env := Check{Name: CheckAgent, Code: stopreasons.EnvironmentInvalid}
	cfg := Check{Name: CheckConfig, Code: stopreasons.ConfigInvalid}
	tests := []struct {
		name   string
		checks []Check
		want   stopreasons.Code
	}{
		{"all pass", []Check{ok, ok}, stopreasons.Complete},
		{"none", nil, stopreasons.Complete},
		{"environment", []Check{ok, env}, stopreasons.EnvironmentInvalid},
		{"config", []Check{ok, cfg}, stopreasons.ConfigInvalid},
		{"config wins", []Check{env, cfg}, stopreasons.ConfigInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, Verdict(tt.checks)) })
	}
}
