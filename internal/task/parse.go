package task

import (
	"regexp"
	"strings"
	"sync"
)

// A checklist item: a bullet (-, *, +) or an ordered marker (1. or 1)),
// then a box. Group 1 is the indent, 2 the box's mark, 3 the text.
var checklistItem = regexp.MustCompile(`^([ \t]*)(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\[([ xX])\][ \t]+(.+?)[ \t]*$`)

// A fence opens or closes a fenced code block: three or more backticks or
// tildes. Group 1 is the indent, 2 the fence.
var fenceLine = regexp.MustCompile("^([ \t]*)(`{3,}|~{3,})")

// taskItem is one checklist item of a task with the lines that belong to
// it: the lines indented past its marker (nested items included) that
// follow it.
type taskItem struct {
	goal    string
	checked bool
	block   string // the item's line and the lines that belong to it
	group   int    // the `##` sections before it (Groups)
}

// taskItems reads a task's checklist. An item's indented lines and nested
// items belong to it and are never items of their own; a box inside a
// fenced code block is text, not an item; an item with nothing after its box
// is no item.
//
// A run asks for the same task's items at every call's prompt: the last
// task read is kept with its items, which callers only read.
func taskItems(task string) []taskItem {
	lastItems.Lock()
	defer lastItems.Unlock()
	if lastItems.items == nil || lastItems.task != task {
		lastItems.task, lastItems.items = task, parseTaskItems(task)
	}
	return lastItems.items
}

// lastItems is the task taskItems read last, with its items (never nil
// once read).
var lastItems struct {
	sync.Mutex
	task  string
	items []taskItem
}

func parseTaskItems(task string) []taskItem {
	items := []taskItem{}
	var (
		cur    = -1 // index of the item whose block is open
		indent int  // the open item's indent
		fence  string
		group  int // `##` headings met outside items and fences
	)
	lines := strings.Split(task, "\n")
	for _, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		blank := strings.TrimSpace(line) == ""
		ind := indentWidth(line)
		if cur >= 0 && !blank && ind <= indent && fence == "" {
			cur = -1 // a line at or left of the marker ends the item
		}
		if cur >= 0 {
			items[cur].block += "\n" + line
		}
		if fence != "" {
			if m := fenceLine.FindStringSubmatch(line); m != nil && m[2][0] == fence[0] && len(m[2]) >= len(fence) && strings.TrimSpace(line[len(m[0]):]) == "" {
				fence = ""
			}
			continue
		}
		// A backtick fence's info string holds no backtick: "```make```
		// must pass" is inline code, not a fence.
		if m := fenceLine.FindStringSubmatch(line); m != nil && (m[2][0] != '`' || !strings.Contains(line[len(m[0]):], "`")) {
			fence = m[2]
			continue
		}
		if cur >= 0 {
			continue // a nested item belongs to the item above it
		}
		if groupHeading.MatchString(line) {
			group++
			continue
		}
		m := checklistItem.FindStringSubmatch(line)
		if m == nil || strings.TrimSpace(m[3]) == "" {
			continue
		}
		items = append(items, taskItem{goal: strings.TrimSpace(m[3]), checked: m[2] != " ", block: line, group: group})
		cur, indent = len(items)-1, indentWidth(m[1])
	}
	for i := range items {
		items[i].block = strings.TrimRight(items[i].block, " \t\r\n")
	}
	return items
}

// indentWidth is the width of a line's leading blanks, a tab counting to
// the next multiple of four.
func indentWidth(line string) int {
	w := 0
	for _, c := range line {
		switch c {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w
		}
	}
	return w
}

// AllChecked reports whether a task has checklist items and every one of
// them is checked: there is nothing to do, and no run is created.
func AllChecked(task string) bool {
	items := taskItems(task)
	for _, it := range items {
		if !it.checked {
			return false
		}
	}
	return len(items) > 0
}

// Goals are the goals of the task's milestones: its unchecked checklist
// items; a task without a checklist is one milestone, named by its first
// line.
func Goals(task string) []string {
	var out []string
	for _, it := range taskItems(task) {
		if !it.checked {
			out = append(out, it.goal)
		}
	}
	if len(out) == 0 {
		out = append(out, taskTitle(task))
	}
	return out
}

// milestoneBlock is the text of the task's i-th unchecked item with the
// lines that belong to it, or "" when the task has no such item or its
// goal is not goal (a run made when the task was read otherwise).
func milestoneBlock(task string, i int, goal string) string {
	n := 0
	for _, it := range taskItems(task) {
		if it.checked {
			continue
		}
		if n == i {
			if it.goal != goal && !strings.HasPrefix(it.goal, strings.TrimSuffix(goal, "…")) {
				return ""
			}
			return it.block
		}
		n++
	}
	return ""
}

// A group heading of a task: a level-two ATX heading (DESIGN §11).
var groupHeading = regexp.MustCompile(`^ {0,3}##(?:[ \t]+.*)?$`)

// Groups returns, for each milestone of Goals(task), the
// index of its group: the milestones under one `##` heading form a group,
// those before the first heading the first. Groups are numbered from 0 in
// task order, counting only those that hold a milestone. A task without
// `##` headings is one group.
func Groups(task string) []int {
	var groups []int
	last, n := -1, -1
	for _, it := range taskItems(task) {
		if it.checked {
			continue
		}
		if it.group != last {
			last = it.group
			n++
		}
		groups = append(groups, n)
	}
	if len(groups) == 0 {
		return []int{0} // the task is one milestone
	}
	return groups
}
