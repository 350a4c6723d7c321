package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// TestOneGitProcessPerTick counts the git processes of a run, through a git
// wrapper first on PATH that logs each call into the log the agent and the
// verify command mark their ticks in: after the run's start, each implement
// tick runs one git process, a git status, verify ticks run none, and each
// checkpoint one git status, its look at what verify left (checkpoint
// commits aside). Not parallel: it sets PATH.
func TestOneGitProcessPerTick(t *testing.T) {
	for _, commit := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint.commit=%v", commit), func(t *testing.T) {
			r := newRun(t, "# Four\n- [ ] one\n- [ ] two\n- [ ] three\n- [ ] four\n")
			log := filepath.Join(t.TempDir(), "calls")
			realGit, err := exec.LookPath("git")
			require.NoError(t, err)
			wrap := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(wrap, "git"),
				[]byte("#!/bin/sh\nprintf 'git %s\\n' \"$*\" >> '"+log+"'\nexec '"+realGit+"' \"$@\"\n"), 0o755))
			t.Setenv("PATH", wrap+string(os.PathListSeparator)+os.Getenv("PATH"))
			r.agent(`echo "agent $RUNR_TICK" >> '` + log + `'; echo "m$RUNR_MILESTONE" > "out-$RUNR_MILESTONE.txt"; echo "RUNR_STATUS: done"`)
			r.set("verify.commands", []string{`echo "verify $RUNR_TICK" >> '` + log + `'`})
			r.set("checkpoint.commit", commit)
			st := r.start()
			require.Equal(t, stopreasons.Complete, st.StopReason.Code, st.StopReason.Message)

			data, err := os.ReadFile(log)
			require.NoError(t, err)
			// The git commands after each agent call (its implement tick)
			// and after each verify (the verify and checkpoint ticks).
			perImplement, perVerify := map[string][]string{}, map[string][]string{}
			var cur map[string][]string
			var tick string
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				f := strings.Fields(line)
				switch f[0] {
				case "agent":
					cur, tick = perImplement, f[1]
					cur[tick] = []string{}
				case "verify":
					cur, tick = perVerify, f[1]
					cur[tick] = []string{}
				case "git":
					if cur != nil {
						cur[tick] = append(cur[tick], gitSubcommand(f[1:]))
					}
				}
			}
			require.Len(t, perImplement, 4)
			for tick, cmds := range perImplement {
				assert.Equal(t, []string{"status"}, cmds, "implement tick %s", tick)
			}
			require.Len(t, perVerify, 4)
			if !commit {
				// The run completed with its work uncommitted: its end
				// reads what it leaves for the summary, one git status
				// after the last tick.
				require.NotNil(t, st.Uncommitted)
				assert.ElementsMatch(t, []string{"out-1.txt", "out-2.txt", "out-3.txt", "out-4.txt"}, st.Uncommitted)
				last := perVerify[tick]
				require.NotEmpty(t, last, "the run's end")
				assert.Equal(t, "status", last[len(last)-1], "the run's end")
				perVerify[tick] = last[:len(last)-1]
			}
			for tick, cmds := range perVerify {
				require.NotEmpty(t, cmds, "the checkpoint after verify tick %s", tick)
				assert.Equal(t, "status", cmds[0], "the checkpoint's look after verify tick %s", tick)
				if commit {
					assert.Contains(t, cmds, "commit-tree", "the checkpoint after verify tick %s", tick)
				} else {
					assert.Equal(t, []string{"status"}, cmds, "the verify tick %s and its checkpoint", tick)
				}
			}
		})
	}
}

// gitSubcommand is the subcommand of a git argv, after its -c options.
func gitSubcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		return args[i]
	}
	return ""
}
