package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// Facts are what the confinement of a run is decided from.
type Facts struct {
	Mode   string // off | auto | on
	ABI    int    // the kernel's Landlock ABI; 0: none
	Kernel string // the kernel's release, for the messages
	// Checkout: the agent works in the user's checkout (its .git is a
	// directory inside the work tree); else in a worktree whose git dirs lie
	// outside it.
	Checkout bool
	// GitFile: the work tree's .git is a file (a linked worktree's, a
	// --worktree run's), which the agent could point at a git dir of its
	// making: runr's own git calls name the git dirs and do not follow it,
	// but git commands run in the work tree later would (a shell prompt's,
	// git worktree remove's), with that git dir's config and hooks.
	GitFile bool
	// DenyDirs: scope.deny names plain directories of the work tree.
	DenyDirs bool
	// Namespaces is nil when the namespace setup works (probed only when
	// NeedsNamespaces), else why not.
	Namespaces error
}

// NeedsNamespaces reports whether a run would use a user and mount
// namespace when it can: to bind the work tree's .git read-only (a
// checkout's directory, a worktree's file), and for deny directories that
// Landlock alone could only build the writable set around.
func NeedsNamespaces(checkout, gitFile, denyDirs bool) bool { return checkout || gitFile || denyDirs }

// Decision is the confinement a run gets.
type Decision struct {
	Mode    string `json:"mode"`
	Confine bool   `json:"confined"`
	// Namespace: the agent runs in its own user and mount namespace, .git
	// and the deny directories bound read-only.
	Namespace bool `json:"namespace"`
	// TopLevel: in the checkout without a namespace, the root of the work
	// tree is not writable, only its existing top-level entries (not .git).
	TopLevel bool `json:"top_level_only,omitempty"`
	// Around: deny directories kept out by Landlock alone: the writable set
	// is built around them.
	Around bool `json:"around_deny,omitempty"`
	// Warnings are said once on stderr before the first call.
	Warnings []string `json:"warnings,omitempty"`
	// Refusal, when set, stops the run with environment_invalid before
	// the first call.
	Refusal string `json:"-"`
}

// ErrNamespacesRefused is wrapped by a probe whose namespaces the kernel
// refused to create.
var ErrNamespacesRefused = errors.New("unprivileged user namespaces are not allowed (kernel.unprivileged_userns_clone / user.max_user_namespaces / AppArmor)")

var errNoHelper = errors.New("the namespace setup was not tried")

// Decide is the confinement of a run from f: a pure function, so that
// each combination of kernel and mode is a row of a table test.
func Decide(f Facts) Decision {
	d := Decision{Mode: f.Mode}
	if f.Mode == "" || f.Mode == ModeOff {
		d.Mode = ModeOff
		return d
	}
	kernel := f.Kernel
	if kernel == "" {
		kernel = "unknown"
	}
	if f.ABI <= 0 {
		if f.Mode == ModeOn {
			d.Refusal = fmt.Sprintf("sandbox.mode is on but this kernel (%s) has no Landlock: the sandbox needs Landlock ABI 1 or later (Linux 5.13+, with landlock in the lsm= boot list); "+
				"set sandbox.mode to auto or off to run unconfined", kernel)
			return d
		}
		d.Warnings = append(d.Warnings, fmt.Sprintf("sandbox: this kernel (%s) has no Landlock (ABI 1 or later needed): the agent runs unconfined", kernel))
		return d
	}
	d.Confine = true
	ns := NeedsNamespaces(f.Checkout, f.GitFile, f.DenyDirs) && f.Namespaces == nil
	switch {
	case ns:
		d.Namespace = true
	case f.Checkout:
		if f.Mode == ModeOn {
			d.Confine = false
			d.Refusal = fmt.Sprintf("sandbox.mode is on and the run works in the checkout, whose .git must be made read-only in a private mount namespace, which failed: %s; "+
				"run with --worktree (the git directories then lie outside the work tree and Landlock alone confines the agent), or set sandbox.mode to auto", cause(f.Namespaces))
			return d
		}
		d.TopLevel = true
		d.Warnings = append(d.Warnings, fmt.Sprintf("sandbox: no private mount namespace (%s): Landlock alone confines the agent; "+
			"the existing top-level files and directories of the checkout stay writable, but not its root: the agent cannot create new top-level files "+
			"nor replace a top-level file by a rename (as git apply and editors do); use --worktree for the full sandbox", cause(f.Namespaces)))
	case f.GitFile:
		// Landlock alone keeps the git dirs, outside the work tree, safe;
		// the .git file only is left.
		d.Warnings = append(d.Warnings, fmt.Sprintf("sandbox: no private mount namespace (%s): the work tree's .git file stays writable; "+
			"runr's own git calls do not follow it, but git commands you run in the work tree would, to a git dir the agent chose", cause(f.Namespaces)))
	}
	if f.DenyDirs && !ns {
		d.Around = true
		d.Warnings = append(d.Warnings, "sandbox: the scope.deny directories are kept read-only by Landlock alone: "+
			"the directories on the way to them accept no new entries (the writable set is built around them)")
	}
	return d
}

func cause(err error) string {
	if err == nil {
		return "unknown cause"
	}
	return strings.TrimPrefix(err.Error(), ErrorPrefix)
}
