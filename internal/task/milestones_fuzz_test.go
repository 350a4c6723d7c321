package task

import (
	"strings"
	"testing"
)

// FuzzMilestones reads any task text. Each milestone's goal is a trimmed
// one-line text taken, in order, from a line of the task that is an
// unchecked checklist item; a task without such an item line is one
// milestone named by its first non-blank line; a task whose items are all
// checked has a checked item line.
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
		goals := Goals(task)
		if len(goals) == 0 {
			t.Fatal("no milestone")
		}
		for i, goal := range goals {
			if strings.TrimSpace(goal) == "" || goal != strings.TrimSpace(goal) {
				t.Fatalf("milestone %d has goal %q, not a trimmed non-blank text", i, goal)
			}
			if strings.Contains(goal, "\n") {
				t.Fatalf("milestone %d spans lines: %q", i, goal)
			}
		}
		lines := strings.Split(task, "\n")
		var unchecked []string // goals of the lines that look like unchecked items
		checked := false
		for _, l := range lines {
			m := checklistItem.FindStringSubmatch(strings.TrimSuffix(l, "\r"))
			if m == nil || strings.TrimSpace(m[3]) == "" {
				continue
			}
			if m[2] == " " {
				unchecked = append(unchecked, strings.TrimSpace(m[3]))
			} else {
				checked = true
			}
		}
		if AllChecked(task) && !checked {
			t.Fatal("all items checked, but no line is a checked item")
		}
		items := taskItems(task)
		if len(items) > 0 {
			if AllChecked(task) {
				return
			}
			// The goals are a subsequence of the unchecked item lines.
			j := 0
			for i, goal := range goals {
				for j < len(unchecked) && unchecked[j] != goal {
					j++
				}
				if j == len(unchecked) {
					t.Fatalf("milestone %d %q is not an unchecked item line in order (%q)", i, goal, unchecked)
				}
				j++
			}
			return
		}
		if len(goals) != 1 {
			t.Fatalf("a task without checklist items has %d milestones", len(goals))
		}
		// A long title is cut on a rune, which spells invalid bytes as U+FFFD.
		goal := strings.TrimSuffix(goals[0], "…")
		if goals[0] != "the task" && !strings.Contains(task, goal) && !strings.Contains(string([]rune(task)), goal) {
			t.Fatalf("goal %q is not from the task", goals[0])
		}
	})
}
