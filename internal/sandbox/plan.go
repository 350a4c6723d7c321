package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Plan is what sandbox.mode comes to on this machine for one work tree:
// the decision, the kernel it was made for, where the agent may write and
// what is bound read-only. It is recorded as the run's `sandbox` event and
// shown by a dry run and runr doctor.
type Plan struct {
	Decision
	ABI      int      `json:"abi"`
	Kernel   string   `json:"kernel"`
	Writable []string `json:"writable,omitempty"`
	ReadOnly []string `json:"read_only,omitempty"`
	// NamespaceError is why the namespace setup failed, when it was tried.
	NamespaceError string `json:"namespace_error,omitempty"`
}

// Input is what a plan is made from.
type Input struct {
	Mode     string
	WorkTree string // where the agent works
	// Worktree: WorkTree is a worktree of the repository (its git dirs lie
	// outside it), or stands for one a run would create (a dry run).
	Worktree bool
	Repo     string   // the repository root: relative sandbox.writable entries are taken from it
	Home     string   // HOME, for ~ in sandbox.writable
	Deny     []string // scope.deny
	Writable []string // sandbox.writable, as written
	State    []string // the agent CLI's state dirs and files, absolute
	TempDir  string   // the run's TMPDIR; "" when not created (a dry run)
	// Helper is the executable started as the helper for the namespace
	// probe; "" skips the probe (the namespace counts as refused).
	Helper string
}

// MakePlan decides and builds the sandbox of in: it reads the Landlock ABI
// and, where a namespace would be used, starts the helper in one to see
// that the read-only binds work. It returns the plan and the policy the
// helper applies; a refusal is in the plan's Decision, an error is one of
// the inputs (a sandbox.writable entry) or of the file system.
func MakePlan(ctx context.Context, in Input) (Plan, Policy, error) {
	// The kernel's facts are the plan's even with the sandbox off: doctor
	// shows them beside its text, which names them.
	plan := Plan{Decision: Decision{Mode: ModeOff}, ABI: ABI(), Kernel: Kernel()}
	if in.Mode == "" || in.Mode == ModeOff {
		return plan, Policy{}, nil
	}
	f := Facts{Mode: in.Mode, ABI: plan.ABI, Kernel: plan.Kernel}
	gitPath := filepath.Join(in.WorkTree, ".git")
	_, err := os.Lstat(gitPath)
	hasGit := err == nil
	f.Checkout = !in.Worktree && isDir(gitPath)
	// A dry run's stand-in for a worktree is the checkout; the worktree
	// would have a .git file.
	f.GitFile = !f.Checkout && (in.Worktree || hasGit)
	deny := DenyDirs(in.WorkTree, in.Deny)
	f.DenyDirs = len(deny) > 0
	if f.ABI > 0 && NeedsNamespaces(f.Checkout, f.GitFile, f.DenyDirs) {
		ro := deny
		if hasGit {
			ro = append([]string{gitPath}, deny...)
		}
		f.Namespaces = errNoHelper
		if in.Helper != "" {
			f.Namespaces = ProbeNamespaces(ctx, in.Helper, in.WorkTree, ro)
		}
		if f.Namespaces != nil {
			plan.NamespaceError = f.Namespaces.Error()
		}
	}
	plan.Decision = Decide(f)
	if plan.Refusal != "" || !plan.Confine {
		return plan, Policy{}, nil
	}
	// Relative entries name paths of the work tree the agent works in,
	// which in a --worktree run is not the user's checkout.
	extra, err := ResolveWritable(in.Writable, in.WorkTree, in.Home)
	if err != nil {
		return plan, Policy{}, err
	}
	if i, g, found := holdsGitDir(in, extra); found {
		return plan, Policy{}, fmt.Errorf("%w %q: it holds or lies in the git directory %s, which the sandbox keeps read-only (hooks, config); name the directories the agent needs instead",
			ErrWritable, in.Writable[i], g)
	}
	// The agent CLI's state dirs may come from its own variables
	// (CLAUDE_CONFIG_DIR=~): they may not hand out the git dirs either.
	if i, g, found := holdsGitDir(in, in.State); found {
		return plan, Policy{}, fmt.Errorf("%w: the agent's state path %s holds or lies in the git directory %s, which the sandbox keeps read-only (hooks, config); point the agent CLI's config directory variable elsewhere",
			ErrStatePath, in.State[i], g)
	}
	p, err := Build(plan.Decision, Layout{WorkTree: in.WorkTree, DenyDirs: deny, TempDir: in.TempDir, Extra: append(extra, in.State...)})
	if err != nil {
		return plan, p, err
	}
	p.ABI = f.ABI
	plan.Writable, plan.ReadOnly = p.Writable, p.ReadOnly
	return plan, p, nil
}

// holdsGitDir finds the first of paths (resolved) that holds the git
// directory of the repository or of the work tree (the repository itself,
// the directory of all your projects), or lies inside one: granted, it
// would hand the agent the hooks and config the sandbox keeps read-only.
// It returns the path's index and the git directory.
func holdsGitDir(in Input, paths []string) (int, string, bool) {
	var gitDirs []string
	for _, root := range []string{in.Repo, in.WorkTree} {
		if root != "" {
			gitDirs = append(gitDirs, realPath(filepath.Join(root, ".git")))
		}
	}
	for i, e := range paths {
		re := realPath(e)
		for _, g := range gitDirs {
			if re == g || beneathAny(g, []string{re}) || beneathAny(re, []string{g}) {
				return i, g, true
			}
		}
	}
	return 0, "", false
}

// realPath is p with its symbolic links resolved, or as written when it
// does not exist.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
