package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// DryRun stops where Start's preflight stops, with the same code, and
// creates nothing in the store; the run that follows it does what it said.
func TestDryRunStopsAsTheRunWould(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *run)
		want  stopreasons.Code // "" : the run starts (and here completes)
		check string           // the check that fails
	}{
		{name: "clean", want: ""},
		{name: "agent not found", setup: func(r *run) { r.set("agent.command", []string{"no-such-agent-program"}) },
			want: stopreasons.WorkerNotFound, check: "agent"},
		{name: "cost budget an unpriced codex cannot report", setup: func(r *run) {
			r.set("agent.kind", "codex")
			r.set("budget.max_cost_usd", 2.0)
		}, want: stopreasons.ConfigInvalid, check: "agent"},
		{name: "cost budget of a command agent (RUNR_USAGE)", setup: func(r *run) { r.set("budget.max_cost_usd", 2.0) }, want: ""},
		{name: "dirty tree", setup: func(r *run) {
			require.NoError(t, os.WriteFile(filepath.Join(r.repo, "README.md"), []byte("changed\n"), 0o644))
		}, want: stopreasons.DirtyWorktree, check: "working tree"},
		{name: "verify program missing", setup: func(r *run) { r.set("verify.commands", []string{"no-such-checker --all"}) },
			want: stopreasons.ConfigInvalid, check: "programs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(t, "# T\n- [ ] first\n- [ ] second\n")
			r.agent(`echo RUNR_STATUS: done`)
			if tc.setup != nil {
				tc.setup(r)
			}
			sup := r.supervisor()
			before := treeListing(t, r.store.Home, r.repo)
			plan := DryRun(context.Background(), sup.o)
			assert.Equal(t, before, treeListing(t, r.store.Home, r.repo), "a dry run writes nothing in the store or the checkout")
			ids, err := r.store.List()
			require.NoError(t, err)
			assert.Empty(t, ids, "a dry run creates no run")
			claims, err := r.store.Claims()
			require.NoError(t, err)
			assert.Empty(t, claims, "a dry run writes no claim")
			assert.Equal(t, []string{"first", "second"}, plan.Milestones)
			assert.Equal(t, sup.cfg.Agent.Kind, plan.Agent.Kind)

			last := plan.Checks[len(plan.Checks)-1]
			if tc.want == "" {
				assert.Nil(t, plan.Stop)
				assert.Len(t, plan.Checks, 6)
				assert.True(t, last.OK)
				assert.NotEmpty(t, plan.Agent.Path)
			} else {
				require.NotNil(t, plan.Stop)
				assert.Equal(t, tc.want, plan.Stop.Code)
				assert.Equal(t, tc.check, last.Name)
				assert.False(t, last.OK)
				assert.Equal(t, plan.Stop.Message, last.Detail)
			}

			st := r.start()
			want := tc.want
			if want == "" {
				want = stopreasons.Complete
			}
			assert.Equal(t, want, st.StopReason.Code, "the run stops as the dry run said")
			if tc.want != "" {
				assert.Equal(t, 0, st.Tick, "before its first tick")
			}
		})
	}
}

// treeListing is every path under the dirs with its size and time, to tell
// whether anything was written there.
func treeListing(t *testing.T, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return nil // gone while walking: the walk says so by its absence
			}
			out = append(out, fmt.Sprintf("%s %d %s", p, info.Size(), info.ModTime().Format(time.RFC3339Nano)))
			return nil
		})
		require.NoError(t, err)
	}
	return out
}
