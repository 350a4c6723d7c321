package agents

import "strings"

// RootSandboxProblem says plainly why claude will refuse to start: run as
// root with permission mode bypassPermissions, Claude Code insists on
// IS_SANDBOX=1 in its environment, to confirm the machine is disposable.
// It returns "" when there is no such problem. env is KEY=VALUE pairs.
func RootSandboxProblem(kind, permissionMode string, euid int, env []string) string {
	if kind != "claude" || euid != 0 {
		return ""
	}
	if permissionMode == "" {
		permissionMode = DefaultPermissionMode
	}
	if permissionMode != "bypassPermissions" {
		return ""
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "IS_SANDBOX="); ok && v == "1" {
			return ""
		}
	}
	return "runr runs as root and agent.permission_mode is bypassPermissions: Claude Code refuses that " +
		"unless IS_SANDBOX=1 is set. If this machine or container is disposable, export IS_SANDBOX=1 " +
		"before runr; otherwise run runr as an ordinary user or set agent.permission_mode to acceptEdits."
}
