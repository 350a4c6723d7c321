package supervisor

import (
	"context"

	"github.com/runr-dev/runr/internal/proc"
)

// startAgentVersion asks the agent program for its version in the
// background, once the start's reads of the checkout are done: a slow
// answer (a CLI that starts a runtime first) then costs the run nothing,
// and the probe does not compete with those reads. takeAgentVersion
// records it in the fingerprint.
func (s *Supervisor) startAgentVersion(ctx context.Context) {
	ch := make(chan string, 1)
	ctx, s.cancelVersion = context.WithCancel(ctx)
	s.agentVersion = ch
	program, args := s.program, s.adapter.VersionArgs()
	go func() { ch <- agentVersion(ctx, program, args) }()
}

// takeAgentVersion records the agent's version in the fingerprint once it
// is known; with wait, it waits for it (a Probe's timeout at most).
func (s *Supervisor) takeAgentVersion(wait bool) {
	if s.agentVersion == nil {
		return
	}
	var v string
	if wait {
		v = <-s.agentVersion
	} else {
		select {
		case v = <-s.agentVersion:
		default:
			return
		}
	}
	s.agentVersion = nil
	s.cancelVersion()
	s.st.Fingerprint.AgentVersion = v
}

// agentVersion asks the agent program for its version, briefly; "" when it
// has no version flag or does not answer.
func agentVersion(ctx context.Context, program string, args []string) string {
	if len(args) == 0 {
		return ""
	}
	v, err := proc.Probe(ctx, proc.Spec{Argv: append([]string{program}, args...)})
	if err != nil {
		return ""
	}
	return v
}
