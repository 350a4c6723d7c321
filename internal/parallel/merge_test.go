package parallel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/supervisor"
)

// Verify commands may write in the tree they check (a formatter, a lock
// file, a generated file): what they leave on the integration worktree
// after a milestone merged must not block or leak into the next merge.
func TestMergeStartsFromTheCleanIntegrationHead(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("1\n2\n3\n4\n5\n6\n"), 0o644))
	gitIn(t, repo, "add", "a.txt")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	base := gitIn(t, repo, "rev-parse", "HEAD")

	store, err := state.Open(filepath.Join(repo, ".git", "runr"))
	require.NoError(t, err)
	prompt := "# T\n- [ ] one\n- [ ] two\n"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &state.State{SchemaVersion: state.SchemaVersion, RunID: "r1", RunStatus: stopreasons.RunRunning, Repo: repo,
		Task: state.Task{Prompt: prompt}, CreatedAt: now, Milestones: supervisor.Milestones(prompt),
		Counters: state.Counters{Edges: map[string]int{}}, Parallel: &state.Parallel{Workers: 2, Requeues: make([]int, 2), Base: base}}
	require.NoError(t, store.Create(st))
	cfg := &config.Config{}
	// The check rewrites a tracked file and leaves an untracked one.
	cfg.Verify.Commands = []string{"echo touched >> a.txt && echo gen > gen.txt"}
	cfg.Verify.Timeout, cfg.Agent.KillGrace = time.Minute, time.Second
	c := newCoordinator(supervisor.Options{Repo: repo, Store: store, Config: cfg, Environ: os.Environ(), Now: func() time.Time { return now },
		Progress: func(supervisor.Progress) {}}, st)
	require.NoError(t, c.ensureTree(ctx, c.integ, c.branch, base, true))

	// Milestone 1 edits the top of a.txt; milestone 2 its end and adds gen.txt.
	w := filepath.Join(c.home, "w1")
	require.NoError(t, c.ensureTree(ctx, w, c.milestoneBranch(1), base, true))
	require.NoError(t, os.WriteFile(filepath.Join(w, "a.txt"), []byte("one\n2\n3\n4\n5\n6\n"), 0o644))
	_, err = guard.CommitAll(ctx, w, "m1", nil)
	require.NoError(t, err)
	require.Nil(t, c.merge(ctx, 1, 1))
	require.Equal(t, state.MilestoneApproved, c.st.Milestones[0].Status)

	head, err := guard.Head(ctx, c.integ)
	require.NoError(t, err)
	require.NoError(t, c.ensureTree(ctx, w, c.milestoneBranch(2), head, true))
	require.NoError(t, os.WriteFile(filepath.Join(w, "a.txt"), []byte("one\n2\n3\n4\n5\nsix\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(w, "gen.txt"), []byte("mine\n"), 0o644))
	_, err = guard.CommitAll(ctx, w, "m2", nil)
	require.NoError(t, err)
	require.Nil(t, c.merge(ctx, 1, 2))
	require.Equal(t, state.MilestoneApproved, c.st.Milestones[1].Status)

	// The milestone commits hold the milestones' changes, not the check's.
	require.Equal(t, "one\n2\n3\n4\n5\nsix\n", gitIn(t, c.integ, "show", "HEAD:a.txt")+"\n")
	require.Equal(t, "mine", gitIn(t, c.integ, "show", "HEAD:gen.txt"))
}

// Two milestones that edit the same line: the first merges, the second is
// undone and requeued with the conflicting file, until parallel.max_requeues,
// when the run stops with merge_conflict naming it. A milestone that breaks
// the verify commands once merged is undone and requeued with its work to
// carry, never left merged.
func TestMergeConflictAndVerifyFailureAreUndoneAndRequeued(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "a.txt"), []byte("1\n2\n3\n"), 0o644))
	gitIn(t, repo, "add", "a.txt")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	base := gitIn(t, repo, "rev-parse", "HEAD")

	store, err := state.Open(filepath.Join(repo, ".git", "runr"))
	require.NoError(t, err)
	prompt := "# T\n- [ ] one\n- [ ] two\n- [ ] three\n"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &state.State{SchemaVersion: state.SchemaVersion, RunID: "r1", RunStatus: stopreasons.RunRunning, Repo: repo,
		Task: state.Task{Prompt: prompt}, CreatedAt: now, Milestones: supervisor.Milestones(prompt),
		Counters: state.Counters{Edges: map[string]int{}}, Parallel: &state.Parallel{Workers: 3, Requeues: make([]int, 3), Base: base}}
	require.NoError(t, store.Create(st))
	cfg := &config.Config{}
	cfg.Verify.Commands = []string{"! grep -q bad a.txt"}
	cfg.Verify.Timeout, cfg.Agent.KillGrace, cfg.Parallel.MaxRequeues = time.Minute, time.Second, 1
	c := newCoordinator(supervisor.Options{Repo: repo, Store: store, Config: cfg, Environ: os.Environ(), Now: func() time.Time { return now },
		Progress: func(supervisor.Progress) {}}, st)
	require.NoError(t, c.ensureTree(ctx, c.integ, c.branch, base, true))
	work := func(k, n int, content string) string {
		w := c.workerDir(k)
		require.NoError(t, c.ensureTree(ctx, w, c.milestoneBranch(n), base, true))
		require.NoError(t, os.WriteFile(filepath.Join(w, "a.txt"), []byte(content), 0o644))
		sha, err := guard.CommitAll(ctx, w, fmt.Sprintf("m%d", n), nil)
		require.NoError(t, err)
		return sha
	}
	work(1, 1, "one\n2\n3\n")
	work(2, 2, "uno\n2\n3\n")
	tip3 := work(3, 3, "1\n2\nbad\n")

	require.Nil(t, c.merge(ctx, 1, 1))
	merged, err := guard.Head(ctx, c.integ)
	require.NoError(t, err)

	require.Nil(t, c.merge(ctx, 2, 2), "requeued, not a stop")
	require.Equal(t, 1, c.st.Parallel.Requeues[1])
	require.Len(t, c.queue, 1)
	require.Equal(t, 2, c.queue[0].milestone)
	require.Equal(t, merged, c.queue[0].start)
	require.Contains(t, c.queue[0].feedback, "a.txt")
	require.Equal(t, merged, gitIn(t, c.integ, "rev-parse", "HEAD"), "the conflicting merge is undone")
	require.Empty(t, gitIn(t, c.integ, "status", "--porcelain"))

	require.Nil(t, c.merge(ctx, 3, 3))
	require.Equal(t, merged, gitIn(t, c.integ, "rev-parse", "HEAD"), "the merge that broke verify is undone")
	require.Empty(t, gitIn(t, c.integ, "status", "--porcelain"))
	require.Equal(t, 3, c.queue[0].milestone)
	require.Equal(t, tip3, c.queue[0].carry)
	require.NotEqual(t, state.MilestoneApproved, c.st.Milestones[2].Status)

	// Milestone 2 conflicts again after its one requeue: merge_conflict.
	sp := c.merge(ctx, 2, 2)
	require.NotNil(t, sp)
	require.Equal(t, stopreasons.MergeConflict, sp.Code)
	require.Equal(t, []string{"a.txt"}, sp.Details.Files)
	require.Contains(t, sp.Message, c.milestoneBranch(2))
	require.Equal(t, merged, gitIn(t, c.integ, "rev-parse", "HEAD"))
	m, err := guard.MergedMilestones(ctx, c.integ, base)
	require.NoError(t, err)
	require.Len(t, m, 1, "only milestone 1 is on the integration branch")

	// A merge asked again for a milestone already merged makes no commit.
	require.Nil(t, c.merge(ctx, 1, 1))
	require.Equal(t, merged, gitIn(t, c.integ, "rev-parse", "HEAD"))
}
