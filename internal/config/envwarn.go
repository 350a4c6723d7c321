package config

import (
	"fmt"
	"sort"
	"strings"
)

// notKeys are the RUNR_ variables that name no key on purpose: runr reads
// RUNR_HOME, sets the others for the processes of a run (and for notify
// commands), so a runr started by an agent or a verify command sees them.
var notKeys = map[string]bool{
	"RUNR_HOME":           true,
	"RUNR_RUN_ID":         true,
	"RUNR_RUN_DIR":        true,
	"RUNR_TICK":           true,
	"RUNR_ITERATION":      true,
	"RUNR_PHASE":          true,
	"RUNR_MILESTONE":      true,
	"RUNR_MILESTONE_GOAL": true,
	"RUNR_WORKER":         true,
	"RUNR_STOP_REASON":    true,
	"RUNR_EXIT_CODE":      true,
}

// notKeyPrefixes start the variables of runr's own test suite.
var notKeyPrefixes = []string{"RUNR_SOAK", "RUNR_TEST_", "RUNR_STATE_HELPER"}

// EnvWarnings returns one warning for each set RUNR_ variable of environ
// that names no key but looks like a misspelt one, naming the nearest
// key: RUNR_BUDGET_TIMEE is probably RUNR_BUDGET_TIME. A variable in a
// key's section that is near no key (RUNR_BUDGET_FOO) gets a warning
// listing the section's keys. Any other RUNR_ variable, far from every
// key, is left alone: other programs may use the prefix too. Such a
// variable is still ignored, as before; the warning only says so.
func EnvWarnings(environ []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "RUNR_") || value == "" || seen[name] {
			continue
		}
		seen[name] = true
		if w := envWarning(name); w != "" {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// envSuffixes are the keys' variable names without RUNR_, lower-cased
// ("budget_time"), in the order of Keys().
var envSuffixes = func() []string {
	out := make([]string, len(keyDefs))
	for i, d := range keyDefs {
		out[i] = strings.ToLower(strings.TrimPrefix(EnvName(d.name), "RUNR_"))
	}
	return out
}()

func envWarning(name string) string {
	if _, ok := envIndex[name]; ok || notKeys[name] {
		return ""
	}
	for _, p := range notKeyPrefixes {
		if strings.HasPrefix(name, p) {
			return ""
		}
	}
	rest := strings.ToLower(strings.TrimPrefix(name, "RUNR_"))
	if near := Closest(rest, envSuffixes, 1); len(near) > 0 {
		for i, s := range envSuffixes {
			if s == near[0] {
				key := keyDefs[i].name
				return fmt.Sprintf("%s is not a runr setting and is ignored; did you mean %s (%s)?", name, EnvName(key), key)
			}
		}
	}
	section, _, _ := strings.Cut(rest, "_")
	if sections[section] {
		var vars []string
		for _, d := range keyDefs {
			if strings.HasPrefix(d.name, section+".") {
				vars = append(vars, EnvName(d.name))
			}
		}
		return fmt.Sprintf("%s is not a runr setting and is ignored; the settings of %s are %s", name, section, strings.Join(vars, ", "))
	}
	return ""
}
