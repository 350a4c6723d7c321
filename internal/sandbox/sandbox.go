// Package sandbox confines the agent's process tree with the kernel: it
// decides what confinement a run gets (Decide, from the Landlock ABI and
// whether a user and mount namespace can be set up), builds the set of
// paths the agent may write (Build), and is the helper runr re-executes
// between the fork and the agent's exec to apply it (Main), so that runr
// itself is never restricted.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"unicode/utf8"
)

// HelperArg is the hidden first argument that makes runr the sandbox
// helper: `runr __sandbox-exec POLICY -- PROGRAM ARGS...`.
const HelperArg = "__sandbox-exec"

// ExitSetupFailed is the helper's exit status when it could not apply the
// policy; it then printed a line starting with ErrorPrefix on stderr and
// ran nothing.
const ExitSetupFailed = 119

// ErrorPrefix starts the helper's message about a failed setup.
const ErrorPrefix = "runr: sandbox: "

// The modes of sandbox.mode.
const (
	ModeOff  = "off"
	ModeAuto = "auto"
	ModeOn   = "on"
)

// Policy is what the helper applies before it becomes the program. It
// travels as JSON in the helper's argv, never in the environment.
type Policy struct {
	// ReadOnly is bound read-only onto itself in the process's own mount
	// namespace (the work tree's .git, the scope.deny directories); it needs
	// Spec.Namespaces.
	ReadOnly []string `json:"read_only,omitempty"`
	// Writable is where Landlock lets the process write: beneath each
	// directory, or the file itself.
	Writable []string `json:"writable,omitempty"`
	// ABI is the Landlock ABI to restrict with; 0 applies no Landlock.
	ABI int `json:"abi"`
	// Probe makes the helper set up ReadOnly, check it and print "ok"
	// instead of running a program.
	Probe bool `json:"probe,omitempty"`
	// CallerMountNS is the mount namespace of the process that made the
	// wrap (runr's, /proc/self/ns/mnt), set by Wrap: the helper binds
	// nothing unless it is in another.
	CallerMountNS string `json:"caller_mount_ns,omitempty"`
}

// mountNamespace names the process's mount namespace; "" when unknown.
func mountNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return ""
	}
	return ns
}

// Wrap is the argv prefix (proc.Spec.Wrap) that runs a program under p:
// the program's path and arguments follow it.
func Wrap(helper string, p Policy) ([]string, error) {
	if helper == "" {
		return nil, errors.New("sandbox: the helper executable is unknown")
	}
	// JSON would carry a name that is not UTF-8 as another name (U+FFFD
	// for each bad byte): the helper would grant or bind the wrong path.
	for _, path := range slices.Concat(p.ReadOnly, p.Writable) {
		if !utf8.ValidString(path) {
			return nil, fmt.Errorf("sandbox: the path %q is not valid UTF-8, which the sandbox cannot name", path)
		}
	}
	p.CallerMountNS = mountNamespace()
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode the policy: %w", err)
	}
	return []string{helper, HelperArg, string(b), "--"}, nil
}

// parseArgs reads the helper's arguments (after HelperArg): the policy,
// then "--" and the program's argv, which a probe has none of.
func parseArgs(args []string) (Policy, []string, error) {
	var p Policy
	if len(args) == 0 {
		return p, nil, errors.New("no policy given")
	}
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return p, nil, fmt.Errorf("the policy is not valid JSON: %w", err)
	}
	rest := args[1:]
	if p.Probe {
		return p, nil, nil
	}
	if len(rest) < 2 || rest[0] != "--" {
		return p, nil, errors.New("no program given after --")
	}
	return p, rest[1:], nil
}
