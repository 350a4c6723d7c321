package doctor

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/sandbox"
	"github.com/runr-dev/runr/internal/state"
)

// CheckSandbox is the name of the environment's sandbox line.
const CheckSandbox = "sandbox"

// SandboxRecord is a run's recorded confinement (its `sandbox` event).
type SandboxRecord struct {
	Mode           string   `json:"mode"`
	Confined       bool     `json:"confined"`
	ABI            int      `json:"abi"`
	Kernel         string   `json:"kernel,omitempty"`
	Namespace      bool     `json:"namespace"`
	NamespaceError string   `json:"namespace_error,omitempty"`
	TopLevelOnly   bool     `json:"top_level_only,omitempty"`
	Writable       []string `json:"writable,omitempty"`
	ReadOnly       []string `json:"read_only,omitempty"`
}

func sandboxRecord(ev *state.SandboxEvent) *SandboxRecord {
	if ev == nil {
		return nil
	}
	return &SandboxRecord{Mode: ev.Mode, Confined: ev.Confined, ABI: ev.ABI, Kernel: ev.Kernel, Namespace: ev.Namespace,
		NamespaceError: ev.NamespaceError, TopLevelOnly: ev.TopLevelOnly, Writable: ev.Writable, ReadOnly: ev.ReadOnly}
}

// Summary says in a line how the agent was confined.
func (r *SandboxRecord) Summary() string {
	switch {
	case !r.Confined:
		return r.Mode + ": unconfined (no Landlock on kernel " + r.Kernel + ")"
	case r.Namespace:
		return fmt.Sprintf("%s: Landlock ABI %d, private mount namespace, read-only: %s", r.Mode, r.ABI, strings.Join(r.ReadOnly, ", "))
	case r.TopLevelOnly:
		return fmt.Sprintf("%s: Landlock ABI %d alone, the checkout's existing top-level entries writable but not its root", r.Mode, r.ABI)
	}
	return fmt.Sprintf("%s: Landlock ABI %d", r.Mode, r.ABI)
}

// checkSandbox is the environment's sandbox line: the kernel's Landlock
// ABI, whether a user and mount namespace can be set up here, and what
// sandbox.mode of the repository's config gives a run in the checkout. It
// fails only when sandbox.mode on would stop a run.
func checkSandbox(ctx context.Context, o EnvOptions, cfg *config.Config, root string) Check {
	c := Check{Name: CheckSandbox, OK: true}
	abi, kernel := sandbox.ABI(), sandbox.Kernel()
	parts := []string{fmt.Sprintf("Landlock ABI %d (kernel %s)", abi, kernel)}
	if abi == 0 {
		parts[0] = fmt.Sprintf("no Landlock (kernel %s)", kernel)
	}
	ns := "not checked (no git checkout here)"
	gitDir := filepath.Join(root, ".git")
	if root != "" && o.SandboxHelper != "" {
		if err := sandbox.ProbeNamespaces(ctx, o.SandboxHelper, root, []string{gitDir}); err != nil {
			ns = "no: " + err.Error()
		} else {
			ns = "yes"
		}
	}
	parts = append(parts, "user namespaces: "+ns)
	if cfg == nil || root == "" {
		c.Detail = strings.Join(parts, "; ")
		return c
	}
	mode := cfg.Sandbox.Mode
	if mode == "" {
		mode = sandbox.ModeOff
	}
	in := sandbox.Input{Mode: mode, WorkTree: root, Repo: root, Home: lookup(o.Environ, "HOME"), Deny: cfg.Scope.Deny,
		Writable: cfg.Sandbox.Writable, State: o.SandboxState, Helper: o.SandboxHelper}
	plan, _, err := sandbox.MakePlan(ctx, in)
	c.Sandbox = &plan
	switch {
	case err != nil:
		c.OK = false
		c.Detail = strings.Join(append(parts, err.Error()), "; ")
		return c
	case mode == sandbox.ModeOff:
		parts = append(parts, "sandbox.mode off: the agent writes wherever its user may")
	case plan.Refusal != "":
		c.OK = false
		parts = append(parts, "a run would stop: "+plan.Refusal)
	case !plan.Confine:
		parts = append(parts, "sandbox.mode "+mode+": a run would be unconfined")
	default:
		what := "sandbox.mode " + mode + ": a run in the checkout may write " + strings.Join(plan.Writable, ", ") + " and its own TMPDIR"
		if len(plan.ReadOnly) > 0 {
			what += "; read-only: " + strings.Join(plan.ReadOnly, ", ")
		}
		parts = append(parts, what)
	}
	c.Detail = strings.Join(parts, "; ")
	return c
}

func lookup(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
