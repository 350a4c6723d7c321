package agents

import (
	"slices"
	"strings"
)

// LimitKind says what kind of provider limit ended a call, so that the
// auto-resume policy can tell a limit that lifts by itself soon from one
// that needs a person.
type LimitKind string

// Limit kinds.
const (
	LimitNone LimitKind = ""
	// LimitRate is a requests- or tokens-per-minute limit: it lifts within
	// seconds or minutes.
	LimitRate LimitKind = "rate"
	// LimitUsageWindow is a subscription's usage limit over a window (Claude's
	// five-hour and weekly limits, Codex's usage_limit_reached, a daily
	// quota): it lifts at the window's reset, often hours away.
	LimitUsageWindow LimitKind = "usage_window"
	// LimitSpendCap is a spend or billing cap: no credits left, a quota
	// exhausted with no reset. It lifts when someone pays, not by waiting.
	LimitSpendCap LimitKind = "spend_cap"
	// LimitOverloaded is the provider's own capacity (529, 503 overloaded):
	// a server error, retried as a failed attempt.
	LimitOverloaded LimitKind = "overloaded"
)

// LimitKinds lists the kinds, in the order docs present them.
func LimitKinds() []LimitKind {
	return []LimitKind{LimitRate, LimitUsageWindow, LimitSpendCap, LimitOverloaded}
}

var (
	usageWindowText = lazyRegexp(`(?i)usage[ _]limit|limit reached\|\d|hit your (?:session |weekly |daily |monthly )?limit|session limit|weekly limit|five_hour|seven_day|(?:daily|weekly|monthly) (?:quota|limit)|per[ -]day`)
	spendCapText    = lazyRegexp(`(?i)credit balance|insufficient[ _]quota|exceeded your current quota|quota (?:exceeded|exhausted)|resource.{0,20}exhausted|billing|spend(?:ing)?[ _-]?(?:cap|limit)|out of credits|no credits|purchase (?:more )?credits|payment required|\b402\b`)
	overloadedText  = lazyRegexp(`(?i)overloaded|\b529\b|\b503\b|service unavailable|serviceunavailable|high demand|at capacity|capacity (?:issue|constraint)`)
)

// limitKindOf classifies the limit of a finished call from its class,
// error text and reset time: a rate or usage limit (ClassRateLimit) is a
// usage window when the text names one, a spend cap when it speaks of
// credits, billing or an exhausted quota and names no reset (with a reset,
// such a quota is a window that lifts), else a rate limit; a server error
// that says the provider is overloaded is LimitOverloaded.
func limitKindOf(r Result) LimitKind {
	switch r.Class {
	case ClassServer:
		if overloadedText().MatchString(r.ErrorText) {
			return LimitOverloaded
		}
		return LimitNone
	case ClassRateLimit:
	default:
		return LimitNone
	}
	switch t := r.ErrorText; {
	case usageWindowText().MatchString(t):
		return LimitUsageWindow
	case spendCapText().MatchString(t):
		if r.ResetAt.IsZero() {
			return LimitSpendCap
		}
		return LimitUsageWindow
	}
	return LimitRate
}

// NestedSessionEnv names the environment variables by which an agent CLI
// recognises that it runs inside another agent's session (it sets them for
// the commands its own tools run). Inherited by the agent runr starts, they
// make a CLI refuse to start, change its behaviour (no relaunch, no
// prompt history, a child session's limits) or connect to the outer
// session's IDE; runr removes them from the agent call's environment,
// whichever kind the call is of: the outer session may be any CLI's. Each
// adapter names its CLI's (found in the CLI's own code, at the version
// `make agents` installs); docs/agents.md lists them per CLI.
var NestedSessionEnv = nestedSessionEnv()

func nestedSessionEnv() []string {
	var env []string
	for _, a := range adapters {
		env = append(env, a.NestedSessionEnv()...)
	}
	return env
}

// WithoutNestedSession returns env (KEY=VALUE entries) less the variables of
// NestedSessionEnv; env itself is not changed.
func WithoutNestedSession(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(NestedSessionEnv, k) {
			out = append(out, kv)
		}
	}
	return out
}
