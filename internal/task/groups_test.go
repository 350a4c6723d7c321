package task

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMilestoneGroups(t *testing.T) {
	tests := []struct {
		name, task string
		want       []int
	}{
		{"no headings", "# T\n- [ ] a\n- [ ] b\n", []int{0, 0}},
		{"no checklist", "Fix the bug.\n", []int{0}},
		{"before the first heading", "- [ ] a\n## Two\n- [ ] b\n- [ ] c\n## Three\n- [ ] d\n", []int{0, 1, 1, 2}},
		{"first heading first group", "# T\n## One\n- [ ] a\n- [ ] b\n## Two\n- [ ] c\n", []int{0, 0, 1}},
		{"empty and done sections", "## A\n- [x] done\n## B\n## C\n- [ ] a\n## D\n- [ ] b\n", []int{0, 1}},
		{"heading in a fence", "## A\n- [ ] a\n```\n## not a group\n```\n- [ ] b\n", []int{0, 0}},
		{"level three is no group", "## A\n- [ ] a\n### detail\n- [ ] b\n", []int{0, 0}},
		{"indented lines of an item", "## A\n- [ ] a\n   ## part of a\n- [ ] b\n", []int{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Groups(tc.task)
			assert.Equal(t, tc.want, got)
			assert.Len(t, got, len(Goals(tc.task)))
		})
	}
}
