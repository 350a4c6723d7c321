package supervisor

import (
	"strings"
	"testing"

	"github.com/runr-dev/runr/internal/state"
)

// FuzzMilestones reads any task text. Each unchecked checklist item with
// text is one milestone whose goal is that text, trimmed, in the order of
// the lines; an item with nothing after its box is no milestone; a task
// without items is one milestone named by its first non-blank line.
func FuzzMilestones(f *testing.F) {
	for _, s := range []string{
		"# Add a flag\n\n- [ ] parse it\n- [x] done already\n  * [ ] nested item  \n+ [ ] plus\n",
		"Fix the bug.\n",
		"",
		"\n\n   \n",
		"- [ ]\n-  [ ] two spaces\n",
		"- [ ] a\r\n- [ ] b\r\n",
		"#\n##  Title with trailing  ##\n",
		"- [ ] " + strings.Repeat("é", 200) + "\n",
		strings.Repeat("x", 300),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, task string) {
		ms := Milestones(task)
		if len(ms) == 0 {
			t.Fatal("no milestone")
		}
		lines := strings.Split(task, "\n")
		var items []string
		for _, l := range lines {
			if m := checklistItem.FindStringSubmatch(l); m != nil && strings.TrimSpace(m[1]) != "" {
				items = append(items, strings.TrimSpace(m[1]))
			}
		}
		for i, m := range ms {
			if m.Status != state.MilestonePending || len(m.Attempts) != 0 {
				t.Fatalf("milestone %d starts as %q with %d attempts", i, m.Status, len(m.Attempts))
			}
			if strings.TrimSpace(m.Goal) == "" || m.Goal != strings.TrimSpace(m.Goal) {
				t.Fatalf("milestone %d has goal %q, not a trimmed non-blank text", i, m.Goal)
			}
			if strings.Contains(m.Goal, "\n") {
				t.Fatalf("milestone %d spans lines: %q", i, m.Goal)
			}
		}
		if len(items) > 0 {
			if len(ms) != len(items) {
				t.Fatalf("%d checklist items but %d milestones", len(items), len(ms))
			}
			for i := range items {
				if ms[i].Goal != items[i] {
					t.Fatalf("milestone %d is %q, its item %q", i, ms[i].Goal, items[i])
				}
			}
			return
		}
		if len(ms) != 1 {
			t.Fatalf("a task without checklist items has %d milestones", len(ms))
		}
		// A long title is cut on a rune, which spells invalid bytes as U+FFFD.
		goal := strings.TrimSuffix(ms[0].Goal, "…")
		if ms[0].Goal != "the task" && !strings.Contains(task, goal) && !strings.Contains(string([]rune(task)), goal) {
			t.Fatalf("goal %q is not from the task", ms[0].Goal)
		}
	})
}
