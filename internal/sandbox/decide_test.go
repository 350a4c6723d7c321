package sandbox

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecide(t *testing.T) {
	refused := errors.New("unprivileged user namespaces are not allowed")
	tests := []struct {
		name  string
		f     Facts
		want  Decision
		warns int
		// refusal holds words the refusal must say; "" for none.
		refusal []string
	}{
		{name: "off", f: Facts{Mode: ModeOff, ABI: 7, Checkout: true}, want: Decision{Mode: ModeOff}},
		{name: "empty mode is off", f: Facts{ABI: 7}, want: Decision{Mode: ModeOff}},
		{name: "on without Landlock stops", f: Facts{Mode: ModeOn, ABI: 0, Kernel: "5.4.0", Checkout: true},
			want: Decision{Mode: ModeOn}, refusal: []string{"5.4.0", "ABI 1"}},
		{name: "auto without Landlock warns, unconfined", f: Facts{Mode: ModeAuto, ABI: 0, Kernel: "5.4.0", Checkout: true},
			want: Decision{Mode: ModeAuto}, warns: 1},
		{name: "on, checkout, namespaces", f: Facts{Mode: ModeOn, ABI: 7, Checkout: true},
			want: Decision{Mode: ModeOn, Confine: true, Namespace: true}},
		{name: "auto, checkout, namespaces", f: Facts{Mode: ModeAuto, ABI: 3, Checkout: true},
			want: Decision{Mode: ModeAuto, Confine: true, Namespace: true}},
		{name: "on, checkout, namespaces refused stops", f: Facts{Mode: ModeOn, ABI: 7, Checkout: true, Namespaces: refused},
			want: Decision{Mode: ModeOn}, refusal: []string{"unprivileged user namespaces are not allowed", "--worktree"}},
		{name: "auto, checkout, namespaces refused: top level only", f: Facts{Mode: ModeAuto, ABI: 7, Checkout: true, Namespaces: refused},
			want: Decision{Mode: ModeAuto, Confine: true, TopLevel: true}, warns: 1},
		{name: "auto, checkout, no namespaces, deny dirs: built around", f: Facts{Mode: ModeAuto, ABI: 7, Checkout: true, DenyDirs: true, Namespaces: refused},
			want: Decision{Mode: ModeAuto, Confine: true, TopLevel: true, Around: true}, warns: 2},
		{name: "on, worktree: Landlock alone", f: Facts{Mode: ModeOn, ABI: 7},
			want: Decision{Mode: ModeOn, Confine: true}},
		{name: "on, worktree, namespaces refused: needs none", f: Facts{Mode: ModeOn, ABI: 7, Namespaces: refused},
			want: Decision{Mode: ModeOn, Confine: true}},
		{name: "on, worktree, deny dirs: bound in a namespace", f: Facts{Mode: ModeOn, ABI: 7, DenyDirs: true},
			want: Decision{Mode: ModeOn, Confine: true, Namespace: true}},
		{name: "on, worktree, deny dirs, no namespaces: built around", f: Facts{Mode: ModeOn, ABI: 7, DenyDirs: true, Namespaces: refused},
			want: Decision{Mode: ModeOn, Confine: true, Around: true}, warns: 1},
		{name: "on, worktree: its .git file bound in a namespace", f: Facts{Mode: ModeOn, ABI: 7, GitFile: true},
			want: Decision{Mode: ModeOn, Confine: true, Namespace: true}},
		{name: "on, worktree, namespaces refused: Landlock alone, the .git file said writable", f: Facts{Mode: ModeOn, ABI: 7, GitFile: true, Namespaces: refused},
			want: Decision{Mode: ModeOn, Confine: true}, warns: 1},
		{name: "auto, worktree, deny dirs, namespaces refused", f: Facts{Mode: ModeAuto, ABI: 7, GitFile: true, DenyDirs: true, Namespaces: refused},
			want: Decision{Mode: ModeAuto, Confine: true, Around: true}, warns: 2},
		{name: "on, worktree, without Landlock stops", f: Facts{Mode: ModeOn, ABI: 0}, want: Decision{Mode: ModeOn}, refusal: []string{"no Landlock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.f)
			assert.Len(t, got.Warnings, tt.warns)
			for _, w := range tt.refusal {
				assert.Contains(t, got.Refusal, w)
			}
			if len(tt.refusal) == 0 {
				assert.Empty(t, got.Refusal)
			}
			got.Warnings, got.Refusal = nil, ""
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDecideSaysWhatTheFallbackGives(t *testing.T) {
	d := Decide(Facts{Mode: ModeAuto, ABI: 7, Checkout: true, Namespaces: errors.New("clone: operation not permitted")})
	assert.Contains(t, d.Warnings[0], "clone: operation not permitted")
	assert.Contains(t, d.Warnings[0], "not its root")
	assert.Contains(t, d.Warnings[0], "new top-level files")
}
