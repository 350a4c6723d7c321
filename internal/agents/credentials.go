package agents

import (
	"fmt"
	"strings"
)

// CredentialWarning says that none of the variables that carry the agent's
// credentials is set in env: the CLI may still be logged in by its own
// means (a login stored in its config), which runr cannot see, so it is a
// warning and never a stop. "" when one is set or the kind has none.
func CredentialWarning(a Adapter, env []string) string {
	names := a.CredentialEnv()
	if len(names) == 0 {
		return ""
	}
	set := map[string]bool{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			set[k] = true
		}
	}
	for _, n := range names {
		if set[n] {
			return ""
		}
	}
	return fmt.Sprintf("none of %s is set: the agent must be logged in by its own means (its login command), or its first call stops with worker_auth_failed", strings.Join(names, ", "))
}
