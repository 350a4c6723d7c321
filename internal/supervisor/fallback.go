package supervisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// agentSettings is base with the agent of index i in effect: 0 is base
// itself, n is agent.fallback[n-1]. A fallback keeps the shared settings
// (timeouts, permission_mode, completion_promise, the fallback list) and
// has no agent.price of its own: its calls are priced from runr's table for
// its model, since agent.price is the primary model's.
func agentSettings(base config.Agent, i int) config.Agent {
	if i <= 0 || i > len(base.Fallback) {
		return base
	}
	f := base.Fallback[i-1]
	a := base
	a.Kind, a.Model, a.Args, a.Command = f.Kind, f.Model, f.Args, f.Command
	a.Price = config.Price{}
	return a
}

// useAgent makes the agent of index i the one the run calls: the config
// the supervisor reads becomes the run's with that agent's settings. The
// adapter and program are found again by prepareAgent.
func (s *Supervisor) useAgent(i int) {
	if i < 0 || i > len(s.o.Config.Agent.Fallback) {
		i = 0
	}
	c := *s.o.Config
	c.Agent = agentSettings(s.o.Config.Agent, i)
	s.cfg = &c
	s.st.AgentIndex = i
	s.adapter, s.program = nil, ""
}

// agentRef names the agent the run calls now.
func (s *Supervisor) agentRef() state.AgentRef {
	return state.AgentRef{Kind: s.cfg.Agent.Kind, Model: s.cfg.Agent.Model}
}

// prepareAgentOrFallback is prepareAgent for the run's current agent; when
// its program is missing, the run switches to the next fallback agent whose
// program is found, before any call.
func (s *Supervisor) prepareAgentOrFallback(ctx context.Context) *stop {
	sp := s.prepareAgent()
	if sp == nil || sp.Code != stopreasons.WorkerNotFound {
		return sp
	}
	if s.switchAgent(ctx, state.SwitchNotFound, time.Time{}, sp.Message) {
		return nil
	}
	noFallbackLeft(sp, len(s.o.Config.Agent.Fallback))
	return sp
}

// checkFallbacks looks up, before the first call, the fallback agents the
// run may switch to, after the current one. A budget a fallback gives no
// figures for is refused now, as for the primary agent; a fallback whose
// program is missing only warns, since it may never be needed (and a
// config shared across machines may name a CLI one of them lacks): a
// switch passes over it.
func (s *Supervisor) checkFallbacks() ([]PlanAgent, *stop) {
	var out []PlanAgent
	cur, cfg, adapter, program := s.st.AgentIndex, s.cfg, s.adapter, s.program
	defer func() {
		s.cfg, s.adapter, s.program, s.st.AgentIndex = cfg, adapter, program, cur
	}()
	for i := cur + 1; i <= len(s.o.Config.Agent.Fallback); i++ {
		key := fmt.Sprintf("agent.fallback[%d]", i-1)
		s.useAgent(i)
		sp := s.prepareAgent()
		pa := PlanAgent{Kind: s.cfg.Agent.Kind, Model: s.cfg.Agent.Model, Path: s.program}
		if s.adapter != nil {
			pa.Program = s.adapter.Program(s.request(""))
		}
		if sp != nil {
			pa.Problem = sp.Message
		}
		out = append(out, pa)
		switch {
		case sp == nil:
		case sp.Code == stopreasons.WorkerNotFound || sp.Code == stopreasons.EnvironmentInvalid:
			msg := fmt.Sprintf("%s (%s) cannot be used: %s; a switch to it is passed over", key, pa.ref(), sp.Message)
			ref := pa.ref()
			s.event(state.FallbackWarningEvent{Index: i, Agent: &ref, Message: msg})
			s.o.Progress(Progress{RunID: s.st.RunID, Msg: ProgressWarning{Message: msg}})
		default:
			sp.Message = key + " (" + pa.ref().String() + "): " + sp.Message
			sp.Condition = key
			return out, sp
		}
	}
	return out, nil
}

// ref names the planned agent.
func (p PlanAgent) ref() state.AgentRef { return state.AgentRef{Kind: p.Kind, Model: p.Model} }

// noFallbackLeft adds to a stop that a switch could have avoided that no
// fallback agent was left to switch to, when the run has fallbacks.
func noFallbackLeft(sp *stop, fallbacks int) {
	if sp == nil || fallbacks == 0 {
		return
	}
	sp.Message += "; no fallback agent left to switch to (agent.fallback)"
}

// switchAgent moves the run to the next fallback agent after the current
// one whose program is found, and records the switch: the agent_switch
// event, state.json's agent_index and agent_switches. A session is not
// continued across agents. It reports false, the run's agent unchanged,
// when none is left.
func (s *Supervisor) switchAgent(ctx context.Context, reason string, resetAt time.Time, why string) bool {
	st := s.st
	from, fromIndex := s.agentRef(), st.AgentIndex
	cfg, adapter, program := s.cfg, s.adapter, s.program
	// Before the first call (preflight) the sandbox is planned later, for
	// whichever agent the run has by then.
	confined := s.sandbox != nil
	var passed []string
	for i := fromIndex + 1; i <= len(s.o.Config.Agent.Fallback); i++ {
		s.useAgent(i)
		if sp := s.prepareAgent(); sp != nil {
			passed = append(passed, fmt.Sprintf("agent.fallback[%d] %s: %s", i-1, s.agentRef(), sp.Message))
			continue
		}
		if confined {
			// The new agent's CLI state dirs join the writable set.
			if sp := s.prepareSandbox(ctx); sp != nil {
				passed = append(passed, fmt.Sprintf("agent.fallback[%d] %s: %s", i-1, s.agentRef(), sp.Message))
				continue
			}
		}
		sw := state.AgentSwitch{Tick: st.Tick, At: s.o.Now().UTC(), From: from, To: s.agentRef(), ToIndex: i, Reason: reason, Message: why}
		if !resetAt.IsZero() {
			sw.ResetAt = resetAt.UTC().Format(time.RFC3339)
		}
		st.AgentSwitches = append(st.AgentSwitches, sw)
		s.sessionID, st.Usage.AgentSessionID = "", ""
		s.event(state.AgentSwitchEvent{From: from, To: sw.To, Reason: reason, ResetAt: sw.ResetAt, Message: why, Index: i, PassedOver: passed})
		s.o.Progress(Progress{RunID: st.RunID, Msg: ProgressWarning{Message: sw.String()}})
		return true
	}
	s.cfg, s.adapter, s.program, st.AgentIndex = cfg, adapter, program, fromIndex
	if confined && s.sandbox == nil {
		// A failed try dropped the current agent's confinement: its stop
		// stands, and whatever comes next runs confined as before.
		_ = s.prepareSandbox(ctx)
	}
	if len(passed) > 0 {
		s.event(state.FallbackWarningEvent{Message: "no fallback agent could be used: " + strings.Join(passed, "; ")})
	}
	return false
}
