package agents

// startChecker is an adapter whose CLI refuses to start in some settings
// it can tell beforehand.
type startChecker interface {
	// StartProblem says plainly why the CLI will refuse to start with
	// permission mode permissionMode, as user euid, in environment env
	// (KEY=VALUE pairs); "" when it will not.
	StartProblem(permissionMode string, euid int, env []string) string
}

// RootSandboxProblem says plainly why an agent of kind will refuse to
// start as euid in env, as its adapter knows (Claude Code run as root); ""
// when there is no such problem.
func RootSandboxProblem(kind, permissionMode string, euid int, env []string) string {
	a, _ := lookup(kind)
	if c, ok := a.(startChecker); ok {
		return c.StartProblem(permissionMode, euid, env)
	}
	return ""
}
