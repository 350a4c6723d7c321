package report

import (
	"fmt"
	"strings"

	"github.com/runr-dev/runr/internal/state"
)

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
