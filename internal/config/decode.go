package config

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"

	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// setting is one key's resolved value on its way into Config. It carries
// its key's kind and where the value came from, so that the decode hooks
// can check it as its source allows and name that source in an error.
type setting struct {
	kind  kind
	src   source
	value any
	raw   any   // the value in the form Config.Raw holds, once decoded
	err   error // why the value was refused
}

// done records what a hook made of the setting and hands mapstructure the
// typed value.
func (s *setting) done(typed, raw any, err error) (any, error) {
	if err != nil {
		s.err = err
		return nil, err
	}
	s.raw = raw
	return typed, nil
}

// decode checks every resolved value and fills the Config and its Raw form.
// mapstructure matches the keys to Config's fields; the hooks turn each
// setting into its field's type. The first error in the order of Keys() is
// the one reported, whatever order mapstructure met them in.
func decode(values map[string]any, sources map[string]source, agentKinds []string) (*Config, error) {
	settings := make([]*setting, len(keyDefs))
	input := make(map[string]any, len(keyDefs))
	for i, d := range keyDefs {
		settings[i] = &setting{kind: d.kind, src: sources[d.name], value: values[d.name]}
		input[d.name] = settings[i]
	}

	c := &Config{}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			onSetting(envList),
			onSetting(durations),
			onSetting(numbers),
			onSetting(choices(agentKinds)),
			onSetting(texts),
			onSetting(conditions),
			onSetting(fallbacks(agentKinds)),
		),
		// Every key has its field; a key without one is a bug here.
		ErrorUnused: true,
		MatchName:   matchName,
		Result:      c,
	})
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.InternalError, err, "config decoder")
	}
	decodeErr := dec.Decode(nest(input))

	raw := make(map[string]any, len(keyDefs))
	for i, s := range settings {
		if s.err != nil {
			return nil, s.err
		}
		raw[keyDefs[i].name] = s.raw
	}
	if decodeErr != nil {
		return nil, stopreasons.Wrap(stopreasons.InternalError, decodeErr, "decode config")
	}
	c.Raw = nest(raw)
	// Every rule was checked above with its source; this catches a rule the
	// stop package refuses that this package let through.
	if err := c.Stop.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// matchName matches a snake_case key to its Go field: max_cost_usd is
// MaxCostUSD.
func matchName(key, field string) bool {
	return strings.EqualFold(strings.ReplaceAll(key, "_", ""), field)
}

// onSetting makes a decode hook of f, which decodes the settings of the
// kinds it knows and returns any other setting unchanged for the next hook.
// Values that are not settings (sections, list items) pass through.
func onSetting(f func(*setting) (any, error)) mapstructure.DecodeHookFuncValue {
	return func(from, _ reflect.Value) (any, error) {
		s, ok := from.Interface().(*setting)
		if !ok {
			return from.Interface(), nil
		}
		return f(s)
	}
}

// envList reads a RUNR_* variable of a list key as a JSON array, to be
// checked by the next hooks like a list from the file.
func envList(s *setting) (any, error) {
	raw, ok := s.value.(string)
	if s.src.origin != fromEnv || !s.kind.isList() || !ok {
		return s, nil
	}
	example := `["go test ./..."]`
	switch s.kind {
	case kindConditions:
		example = `[{"type": "all_tests_pass"}]`
	case kindDurations:
		example = `["30s", "2m", "5m"]`
	case kindFallback:
		example = `[{"kind": "codex", "model": "gpt-5-codex"}]`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var value any
	err := dec.Decode(&value)
	if _, isList := value.([]any); err != nil || dec.More() || !isList {
		return s.done(nil, nil, s.src.invalid(raw, "not a JSON array (write e.g. "+example+")"))
	}
	s.value = normalize(value)
	return s, nil
}

// durations decodes durations, budget.time (where a bare number is
// minutes) and lists of durations.
func durations(s *setting) (any, error) {
	switch s.kind {
	case kindDuration:
		d, err := parseDuration(s.src, s.value)
		return s.done(d, FormatDuration(d), err)
	case kindBudgetTime:
		d, err := parseBudgetTime(s.src, s.value)
		return s.done(d, FormatDuration(d), err)
	case kindDurations:
		ds, err := parseDurations(s.src, s.value)
		shown := make([]string, len(ds))
		for i, d := range ds {
			shown[i] = FormatDuration(d)
		}
		return s.done(ds, shown, err)
	}
	return s, nil
}

// numbers decodes counts, amounts of money and rates.
func numbers(s *setting) (any, error) {
	switch s.kind {
	case kindCount:
		n, err := parseInt(s.src, s.value)
		return s.done(n, n, err)
	case kindWorkers:
		// Its own minimum is checked first: parseInt's advice for a
		// negative count names 0, which is below it.
		if w, err := parseWhole(s.src, s.value); err == nil && w < 1 {
			return s.done(0, 0, s.src.invalid(s.value, "below 1 (1 works the milestones one at a time)"))
		}
		n, err := parseInt(s.src, s.value)
		return s.done(n, n, err)
	case kindCount64:
		n, err := parseCount(s.src, s.value)
		return s.done(n, n, err)
	case kindAmount:
		f, err := parseAmount(s.src, s.value)
		return s.done(f, f, err)
	case kindRate:
		f, err := parseRate(s.src, s.value)
		return s.done(f, f, err)
	case kindSize:
		n, err := parseSize(s.src, s.value)
		return s.done(n, FormatSize(n), err)
	}
	return s, nil
}

// choices decodes the keys that take one of a few words. agent.kind takes
// the kinds its caller knows; with none given, any text.
func choices(agentKinds []string) func(*setting) (any, error) {
	return func(s *setting) (any, error) {
		var allowed []string
		switch s.kind {
		case kindAgentKind:
			allowed = agentKinds
		case kindOnFailure:
			allowed = []string{stopconditions.OnFailureStop, stopconditions.OnFailureSkip}
		case kindNotifyFormat:
			allowed = NotifyFormats
		case kindSandboxMode:
			allowed = SandboxModes
		case kindRequireTests:
			allowed = RequireTestsModes
		case kindNotifyOn:
			l, err := parseChoices(s.src, s.value, NotifyEvents)
			return s.done(l, l, err)
		case kindEnvVarName:
			n, err := parseEnvVarName(s.src, s.value)
			return s.done(n, n, err)
		default:
			return s, nil
		}
		c, err := parseChoice(s.src, s.value, allowed)
		return s.done(c, c, err)
	}
}

// texts decodes strings, lists of strings, globs and true/false.
func texts(s *setting) (any, error) {
	switch s.kind {
	case kindString:
		t, err := parseString(s.src, s.value)
		return s.done(t, t, err)
	case kindStrings:
		l, err := parseStrings(s.src, s.value)
		return s.done(l, l, err)
	case kindGlobs:
		l, err := parseGlobs(s.src, s.value)
		return s.done(l, l, err)
	case kindBool:
		b, err := parseBool(s.src, s.value)
		return s.done(b, b, err)
	}
	return s, nil
}

// conditions decodes a list of custom stop conditions; the stop package's
// errors name the entry ("stop.success[1].pattern: ..."), to which this
// adds where the list came from. Raw keeps the list as written.
func conditions(s *setting) (any, error) {
	if s.kind != kindConditions {
		return s, nil
	}
	items, ok := listOf(s.value)
	if !ok {
		return s.done(nil, nil, s.src.invalid(s.value, "not a list of conditions (write e.g. [{type: all_tests_pass}])"))
	}
	items = normalize(items).([]any)
	conds, err := stopconditions.DecodeList(s.src.key, items)
	if err != nil {
		return s.done(nil, nil, stopreasons.Wrap(stopreasons.ConfigInvalid, err, "%s", s.src.prefix()))
	}
	if conds == nil {
		conds = []stopconditions.Condition{}
	}
	return s.done(conds, items, nil)
}

// fallbacks decodes agent.fallback: a list of agents, each a mapping of
// kind (one of the kinds the caller knows), model, args and, for kind
// command, its command. Raw keeps each entry with the fields it set.
func fallbacks(agentKinds []string) func(*setting) (any, error) {
	return func(s *setting) (any, error) {
		if s.kind != kindFallback {
			return s, nil
		}
		items, ok := listOf(s.value)
		if !ok {
			return s.done(nil, nil, s.src.invalid(s.value, "not a list of agents (write e.g. [{kind: codex, model: gpt-5-codex}])"))
		}
		out := make([]FallbackAgent, 0, len(items))
		raw := make([]any, 0, len(items))
		for i, item := range items {
			f, err := fallbackAgent(s.src.item(i), normalize(item), agentKinds)
			if err != nil {
				return s.done(nil, nil, err)
			}
			out = append(out, f)
			r := map[string]any{"kind": f.Kind}
			if f.Model != "" {
				r["model"] = f.Model
			}
			if len(f.Args) > 0 {
				r["args"] = f.Args
			}
			if len(f.Command) > 0 {
				r["command"] = f.Command
			}
			raw = append(raw, r)
		}
		return s.done(out, raw, nil)
	}
}

// fallbackAgent decodes one entry of agent.fallback; src names the entry
// ("agent.fallback[1]").
func fallbackAgent(src source, v any, agentKinds []string) (FallbackAgent, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return FallbackAgent{}, src.invalid(v, "not a mapping with kind and model (write e.g. {kind: codex, model: gpt-5-codex})")
	}
	field := func(name string) source {
		f := src
		f.key += "." + name
		return f
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(FallbackFields, k) {
			problem := "not a field of an entry (an entry takes " + strings.Join(FallbackFields, ", ") + ")"
			if near := Closest(k, FallbackFields, 1); len(near) > 0 {
				problem += "; did you mean " + near[0] + "?"
			}
			return FallbackAgent{}, field(k).invalid(k, problem)
		}
	}
	var f FallbackAgent
	kind, present := m["kind"]
	if !present {
		return f, src.invalid(v, "missing its kind (write e.g. {kind: codex, model: gpt-5-codex})")
	}
	var err error
	if f.Kind, err = parseChoice(field("kind"), kind, agentKinds); err != nil {
		return f, err
	}
	if model, ok := m["model"]; ok && model != nil {
		if f.Model, err = parseString(field("model"), model); err != nil {
			return f, err
		}
	}
	if args, ok := m["args"]; ok && args != nil {
		if f.Args, err = parseStrings(field("args"), args); err != nil {
			return f, err
		}
	}
	if cmd, ok := m["command"]; ok && cmd != nil {
		if f.Command, err = parseStrings(field("command"), cmd); err != nil {
			return f, err
		}
	}
	switch {
	case f.Kind == "command" && len(f.Command) == 0:
		return f, src.invalid(v, "kind command without its command (write e.g. {kind: command, command: [my-agent, --prompt, \"{prompt}\"]})")
	case f.Kind != "command" && len(f.Command) > 0:
		return f, field("command").invalid(f.Command, "only for kind command (an adapter's extra arguments go in args)")
	}
	return f, nil
}
