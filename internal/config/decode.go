package config

import (
	"encoding/json"
	"reflect"
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
	case kindCount64:
		n, err := parseCount(s.src, s.value)
		return s.done(n, n, err)
	case kindAmount:
		f, err := parseAmount(s.src, s.value)
		return s.done(f, f, err)
	case kindRate:
		f, err := parseRate(s.src, s.value)
		return s.done(f, f, err)
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
