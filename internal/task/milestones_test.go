package task

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMilestones(t *testing.T) {
	tests := []struct {
		name string
		task string
		want []string
	}{
		{"checklist", "# Work\n- [ ] fix Add\n- [x] done already\n* [ ] star item  \n+ [ ] plus item\n- [] not an item\n", []string{"fix Add", "star item", "plus item"}},
		{"ordered items", "1. [ ] first\n2) [ ] second\n3. [x] third\n10. [ ] tenth\n", []string{"first", "second", "tenth"}},
		{"nested items belong to the item above", "- [ ] parent\n  - [ ] child\n    - [ ] grandchild\n  details\n- [ ] next\n", []string{"parent", "next"}},
		{"nested under a checked item: done with it", "- [x] done\n  - [ ] its step\n- [ ] todo\n", []string{"todo"}},
		{"tab-indented item is nested", "- [ ] a\n\t- [ ] b\n", []string{"a"}},
		{"boxes in a fenced block are text", "- [ ] real\n\n```md\n- [ ] example\n```\n~~~\n- [ ] tilde example\n~~~\n- [ ] after\n", []string{"real", "after"}},
		{"inline code at a line's start is no fence", "- [x] setup\n```make build``` must pass\n- [ ] implement\n", []string{"implement"}},
		{"an unclosed fence hides the rest", "- [ ] a\n````\n- [ ] b\n```\n- [ ] c\n", []string{"a"}},
		{"a fence inside an item belongs to it", "- [ ] a\n  ```\n- [ ] in code\n  ```\n- [ ] b\n", []string{"a", "b"}},
		{"CRLF", "- [ ] a\r\n- [ ] b\r\n", []string{"a", "b"}},
		{"empty box is no item", "# T\n- [ ]   \n", []string{"T"}},
		{"no checklist: the title", "\n## Make the tests pass\n\nSome text.\n", []string{"Make the tests pass"}},
		{"empty", "  \n", []string{"the task"}},
		{"long title cut on a rune", strings.Repeat("é", 130), []string{strings.Repeat("é", 120) + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Goals(tt.task))
		})
	}
}

func TestAllChecked(t *testing.T) {
	for task, want := range map[string]bool{
		"# Done\n- [x] a\n- [X] b\n":            true,
		"1. [x] a\n   - [ ] its step\n":         true,
		"- [x] a\n- [ ] b\n":                    false,
		"Fix the bug.\n":                        false, // no checklist: one milestone
		"- [x] a\n```\n- [ ] in a fence\n```\n": true,
		"":                                      false,
	} {
		assert.Equal(t, want, AllChecked(task), "task %q", task)
	}
}

// TestTaskItemsOfEachTask: the items kept for the last task read are
// never another task's.
func TestTaskItemsOfEachTask(t *testing.T) {
	a, b := "- [ ] one\n- [ ] two\n", "- [ ] three\n"
	for range 2 {
		assert.Equal(t, []string{"one", "two"}, Goals(a))
		assert.Equal(t, []string{"three"}, Goals(b))
	}
}
