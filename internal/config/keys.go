package config

import (
	"sort"
	"strings"

	"github.com/runr-dev/runr/internal/stopconditions"
)

// kind says how a key's value is written and checked.
type kind int

const (
	kindString     kind = iota
	kindStrings         // a list of strings
	kindGlobs           // a list of doublestar patterns
	kindDuration        // a Go duration with a unit, greater than 0
	kindBudgetTime      // a duration, or a bare number of minutes
	kindDurations       // a non-empty list of durations
	kindCount           // a whole number, 0 or more
	kindCount64         // a whole number, 0 or more, that may exceed 32 bits
	kindAmount          // a number, 0 or more (money)
	kindRate            // a number from 0 to 1
	kindBool
	kindAgentKind    // one of LoadOptions.AgentKinds
	kindOnFailure    // stop or skip
	kindConditions   // a list of custom stop conditions
	kindNotifyFormat // json, slack, discord or ntfy
	kindNotifyOn     // a list of stop, failure, success, milestone
	kindEnvVarName   // "" or the name of an environment variable
	kindSandboxMode  // off, auto or on
	kindFallback     // a list of agents to switch to (agent.fallback)
	kindWorkers      // a whole number, 1 or more (parallel.workers)
	kindSize         // a size in bytes: 64MiB, 512KiB, 1GiB, or a whole number of bytes
	kindRequireTests // auto, on or off (verify.require_tests)
)

// isList reports whether an environment variable for the kind holds a JSON array.
func (k kind) isList() bool {
	switch k {
	case kindStrings, kindGlobs, kindDurations, kindConditions, kindNotifyOn, kindFallback:
		return true
	}
	return false
}

// keyDef is one known key: its dotted name, how it is written, and its
// default in the form a runr.yaml would write it.
type keyDef struct {
	name string
	kind kind
	def  any
}

// defaultLockfiles are the files that change only when dependencies change.
var defaultLockfiles = []string{
	"go.sum", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "Cargo.lock",
	"poetry.lock", "uv.lock", "Gemfile.lock", "composer.lock",
}

// DefaultLockfiles returns the default of scope.lockfiles.
func DefaultLockfiles() []string {
	return append([]string(nil), defaultLockfiles...)
}

// keyDefs lists every key in the order of DESIGN §10; that order is also
// the order in which values are checked, so the first error is predictable.
var keyDefs = func() []keyDef {
	keys := []keyDef{
		{"agent.kind", kindAgentKind, "command"},
		{"agent.command", kindStrings, []string{}},
		{"agent.args", kindStrings, []string{}},
		{"agent.model", kindString, ""},
		{"agent.permission_mode", kindString, "bypassPermissions"},
		{"agent.timeout", kindDuration, "20m"},
		{"agent.idle_timeout", kindDuration, "5m"},
		{"agent.log_cap", kindSize, "64MiB"},
		{"agent.kill_grace", kindDuration, "5s"},
		{"agent.completion_promise", kindString, "<promise>COMPLETE</promise>"},
		{"agent.continue_session", kindBool, false},
		{"agent.price.input_per_mtok", kindAmount, 0.0},
		{"agent.price.output_per_mtok", kindAmount, 0.0},
		{"agent.fallback", kindFallback, []any{}},
		{"agent.result_grace", kindDuration, "10s"},
		{"task", kindString, ""},
		{"verify.commands", kindStrings, []string{}},
		{"verify.timeout", kindDuration, "10m"},
		{"verify.require_tests", kindRequireTests, RequireTestsAuto},
		{"verify.coverage.profiles", kindGlobs, []string{}},
		{"verify.coverage.min_changed", kindRate, 0.0},
		{"review.command", kindStrings, []string{}},
		{"scope.allow", kindGlobs, []string{}},
		{"scope.deny", kindGlobs, []string{}},
		{"scope.protect", kindGlobs, []string{}},
		{"scope.lockfiles", kindGlobs, defaultLockfiles},
		{"checkpoint.commit", kindBool, false},
		{"budget.time", kindBudgetTime, "30m"},
		{"budget.max_ticks", kindCount, 200},
		{"budget.max_iterations", kindCount, 0},
		{"budget.max_cost_usd", kindAmount, 0.0},
		{"budget.max_tokens", kindCount64, 0},
	}
	// The built-in rules come from their table, in its order (DESIGN §4).
	for _, b := range stopconditions.Builtins {
		keys = append(keys, keyDef{"stop." + b.Key, ruleKinds[b.Kind], b.Default})
	}
	return append(keys, []keyDef{
		{"stop.success", kindConditions, []any{}},
		{"stop.failure", kindConditions, []any{}},
		{"stop.conditions", kindConditions, []any{}},
		{"resume.max_auto_resumes", kindCount, 3},
		{"resume.backoff", kindDurations, []string{"30s", "2m", "5m"}},
		{"resume.max_wait", kindDuration, "6h"},
		{"sandbox.mode", kindSandboxMode, SandboxOff},
		{"sandbox.writable", kindStrings, []string{}},
		{"notify.command", kindStrings, []string{}},
		{"notify.webhook_url_env", kindEnvVarName, ""},
		{"notify.format", kindNotifyFormat, NotifyJSON},
		{"notify.on", kindNotifyOn, []string{NotifyOnStop}},
		{"notify.timeout", kindDuration, "10s"},
		{"parallel.workers", kindWorkers, 1},
		{"parallel.max_requeues", kindCount, 2},
		{"telemetry.otlp_endpoint", kindString, ""},
		{"telemetry.timeout", kindDuration, "5s"},
	}...)
}()

// ruleKinds are how the values of the built-in rules are written.
var ruleKinds = map[stopconditions.Kind]kind{
	stopconditions.KindCount: kindCount,
	stopconditions.KindRate:  kindRate,
	stopconditions.KindMode:  kindOnFailure,
}

// keyIndex finds a key's definition by its dotted name.
var keyIndex = func() map[string]keyDef {
	m := make(map[string]keyDef, len(keyDefs))
	for _, d := range keyDefs {
		m[d.name] = d
	}
	return m
}()

// sections holds every dotted prefix of a key ("agent", "agent.price"):
// the names under which runr.yaml holds a mapping rather than a value.
var sections = func() map[string]bool {
	m := map[string]bool{}
	for _, d := range keyDefs {
		parts := strings.Split(d.name, ".")
		for i := 1; i < len(parts); i++ {
			m[strings.Join(parts[:i], ".")] = true
		}
	}
	return m
}()

// envIndex maps each RUNR_* variable name to its key.
var envIndex = func() map[string]string {
	m := make(map[string]string, len(keyDefs))
	for _, d := range keyDefs {
		m[EnvName(d.name)] = d.name
	}
	return m
}()

// Keys returns every known dotted key in the order of the design contract.
func Keys() []string {
	keys := make([]string, len(keyDefs))
	for i, d := range keyDefs {
		keys[i] = d.name
	}
	return keys
}

// EnvName returns the environment variable that sets key:
// "budget.time" is RUNR_BUDGET_TIME.
func EnvName(key string) string {
	return "RUNR_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// names are the known keys and sections, sorted: what an unknown key in
// runr.yaml may have meant.
var names = func() []string {
	out := make([]string, 0, len(keyDefs)+len(sections))
	for _, d := range keyDefs {
		out = append(out, d.name)
	}
	for s := range sections {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}()

// suggest returns the known key or section closest to name, or "" when none
// is close enough to be what the user meant.
func suggest(name string) string {
	if near := Closest(name, names, 1); len(near) > 0 {
		return near[0]
	}
	// The right key in the wrong section: "budget.max_retry_rate".
	last := name[strings.LastIndex(name, ".")+1:]
	for _, c := range names {
		if c[strings.LastIndex(c, ".")+1:] == last {
			return c
		}
	}
	return ""
}
