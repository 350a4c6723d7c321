package task

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// call is the prompt's input for a milestone of a new run of the task.
func call(task string, milestone int) Call {
	goals := Goals(task)
	return Call{Task: task, Milestone: milestone, Milestones: len(goals), Goal: goals[milestone], Promise: "<promise>COMPLETE</promise>"}
}

// The current milestone's section of the prompt carries the item's
// indented lines and nested items.
func TestPromptCarriesTheMilestonesBlock(t *testing.T) {
	task := "# Work\n- [ ] fix Add\n  - handle overflow\n  - [ ] and negative numbers\n- [ ] add Max\n"
	p := Prompt(call(task, 0))
	assert.Contains(t, p, "# Current milestone (1 of 2)\n\n- [ ] fix Add\n  - handle overflow\n  - [ ] and negative numbers\n\n")
	p = Prompt(call(task, 1))
	assert.Contains(t, p, "# Current milestone (2 of 2)\n\nadd Max\n\n")

	// A run made when nested items were milestones of their own keeps its
	// goals: the block of another item is not shown for one of them.
	p = Prompt(Call{Task: task, Milestone: 1, Milestones: 3, Goal: "and negative numbers", Promise: "<promise>COMPLETE</promise>"})
	assert.Contains(t, p, "# Current milestone (2 of 3)\n\nand negative numbers\n\n")
}
