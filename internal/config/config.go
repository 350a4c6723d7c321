// Package config resolves runr's settings: defaults, then runr.yaml (or
// --config), then RUNR_* environment variables, then flags, each layer over
// the one below. Every value is checked; an invalid one, or an unknown key in
// the file, is a config_invalid error that names where the value came from,
// the value, and what is allowed.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/runr-dev/runr/internal/stopconditions"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// Config is the resolved configuration of a run.
type Config struct {
	Agent      Agent
	Task       string
	Verify     Verify
	Review     Review
	Scope      Scope
	Checkpoint Checkpoint
	Budget     Budget
	Stop       stopconditions.Rules // built-in rules and the decoded custom conditions
	Resume     Resume

	// File is the config file that was read, "" when there was none.
	File string
	// Raw holds the resolved settings as plain nested data, in the shape of
	// runr.yaml: durations as strings, custom conditions as written. It is
	// what a run records as config.json and what Hash digests.
	Raw map[string]any
}

// Agent is the `agent:` section.
type Agent struct {
	Kind              string
	Command, Args     []string
	Model             string
	PermissionMode    string
	Timeout           time.Duration
	IdleTimeout       time.Duration
	KillGrace         time.Duration
	CompletionPromise string
	ContinueSession   bool
	Price             Price
}

// Price is agent.price: USD per million tokens, to estimate the cost of
// agents whose CLI reports none.
type Price struct {
	InputPerMTok, OutputPerMTok float64
}

// Verify is the `verify:` section.
type Verify struct {
	Commands []string
	Timeout  time.Duration
}

// Review is the `review:` section.
type Review struct {
	Command []string
}

// Scope is the `scope:` section.
type Scope struct {
	Allow, Deny, Lockfiles []string
}

// Checkpoint is the `checkpoint:` section.
type Checkpoint struct {
	Commit bool
}

// Budget is the `budget:` section; a zero count or amount turns its limit off.
type Budget struct {
	Time          time.Duration
	MaxTicks      int
	MaxIterations int
	MaxCostUSD    float64
	MaxTokens     int64
}

// Resume is the `resume:` section: the auto-resume policy.
type Resume struct {
	MaxAutoResumes int
	Backoff        []time.Duration
	MaxWait        time.Duration
}

// Override is one setting from a flag, the highest layer.
type Override struct {
	Key    string // dotted key, e.g. "budget.time"
	Value  any    // string, []string, bool or int, as the flag gave it
	Source string // the flag as the user typed it, e.g. "--time"
}

// LoadOptions say where Load finds the layers above the defaults.
type LoadOptions struct {
	RepoRoot   string     // runr.yaml is read from here unless ConfigFile is set
	ConfigFile string     // --config; a missing explicit file is config_invalid
	Environ    []string   // normally os.Environ(); RUNR_* variables are read from here only
	Overrides  []Override // from flags
}

// Load resolves the configuration. RUNR_* variables that name no key are
// ignored, since runr sets some for its children; an empty variable counts as
// unset. Errors are config_invalid, except an override of an unknown key,
// which is a bug of the caller (internal_error).
func Load(opts LoadOptions) (*Config, error) {
	v := viper.New()
	sources := make(map[string]source, len(keyDefs))
	for _, d := range keyDefs {
		v.SetDefault(d.name, d.def)
		sources[d.name] = source{origin: fromDefault, key: d.name}
	}

	path, err := findFile(opts)
	if err != nil {
		return nil, err
	}
	if path != "" {
		set, err := readFile(path, shownName(path, opts.RepoRoot))
		if err != nil {
			return nil, err
		}
		if err := v.MergeConfigMap(nest(set.values)); err != nil {
			return nil, stopreasons.Wrap(stopreasons.ConfigInvalid, err, "%s", set.shown)
		}
		for key := range set.values {
			sources[key] = source{origin: fromFile, name: set.shown, key: key}
		}
	}

	// viper's own env binding reads the process environment and splits keys
	// at every underscore; mapping the names from Keys() is exact.
	for _, kv := range opts.Environ {
		name, raw, _ := strings.Cut(kv, "=")
		key, ok := envIndex[name]
		if !ok || raw == "" {
			continue
		}
		src := source{origin: fromEnv, name: name, key: key}
		value, err := envValue(src, keyIndex[key].kind, raw)
		if err != nil {
			return nil, err
		}
		v.Set(key, value)
		sources[key] = src
	}

	for _, o := range opts.Overrides {
		if _, ok := keyIndex[o.Key]; !ok {
			return nil, stopreasons.Errorf(stopreasons.InternalError, "override from %s: %q is not a config key", o.Source, o.Key)
		}
		name := o.Source
		if name == "" {
			name = "--" + strings.ReplaceAll(o.Key, "_", "-")
		}
		v.Set(o.Key, o.Value)
		sources[o.Key] = source{origin: fromFlag, name: name, key: o.Key}
	}

	c, err := build(v, sources)
	if err != nil {
		return nil, err
	}
	c.File = path
	return c, nil
}

// envValue reads a variable's text: lists as JSON arrays, anything else as
// the text itself, checked later like a value from the file.
func envValue(src source, k kind, raw string) (any, error) {
	if !k.isList() {
		return raw, nil
	}
	example := `["go test ./..."]`
	switch k {
	case kindConditions:
		example = `[{"type": "all_tests_pass"}]`
	case kindDurations:
		example = `["30s", "2m", "5m"]`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil || dec.More() {
		return nil, src.invalid(raw, "not a JSON array (write e.g. "+example+")")
	}
	if _, ok := value.([]any); !ok {
		return nil, src.invalid(raw, "not a JSON array (write e.g. "+example+")")
	}
	return normalize(value), nil
}

// nest turns dotted keys into the nested maps viper merges.
func nest(flat map[string]any) map[string]any {
	out := map[string]any{}
	for key, value := range flat {
		parts := strings.Split(key, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = value
	}
	return out
}

// build checks every resolved value, in the order of Keys(), and fills the
// Config and its Raw form.
func build(v *viper.Viper, sources map[string]source) (*Config, error) {
	typed := make(map[string]any, len(keyDefs))
	raw := make(map[string]any, len(keyDefs))
	for _, d := range keyDefs {
		t, r, err := resolve(d.kind, sources[d.name], v.Get(d.name))
		if err != nil {
			return nil, err
		}
		typed[d.name], raw[d.name] = t, r
	}

	c := &Config{Raw: nest(raw)}
	c.Agent = Agent{
		Kind:              typed["agent.kind"].(string),
		Command:           typed["agent.command"].([]string),
		Args:              typed["agent.args"].([]string),
		Model:             typed["agent.model"].(string),
		PermissionMode:    typed["agent.permission_mode"].(string),
		Timeout:           typed["agent.timeout"].(time.Duration),
		IdleTimeout:       typed["agent.idle_timeout"].(time.Duration),
		KillGrace:         typed["agent.kill_grace"].(time.Duration),
		CompletionPromise: typed["agent.completion_promise"].(string),
		ContinueSession:   typed["agent.continue_session"].(bool),
		Price: Price{
			InputPerMTok:  typed["agent.price.input_per_mtok"].(float64),
			OutputPerMTok: typed["agent.price.output_per_mtok"].(float64),
		},
	}
	c.Task = typed["task"].(string)
	c.Verify = Verify{Commands: typed["verify.commands"].([]string), Timeout: typed["verify.timeout"].(time.Duration)}
	c.Review = Review{Command: typed["review.command"].([]string)}
	c.Scope = Scope{
		Allow:     typed["scope.allow"].([]string),
		Deny:      typed["scope.deny"].([]string),
		Lockfiles: typed["scope.lockfiles"].([]string),
	}
	c.Checkpoint = Checkpoint{Commit: typed["checkpoint.commit"].(bool)}
	c.Budget = Budget{
		Time:          typed["budget.time"].(time.Duration),
		MaxTicks:      typed["budget.max_ticks"].(int),
		MaxIterations: typed["budget.max_iterations"].(int),
		MaxCostUSD:    typed["budget.max_cost_usd"].(float64),
		MaxTokens:     typed["budget.max_tokens"].(int64),
	}
	c.Stop = stopconditions.Rules{
		MaxMilestoneRetries: typed["stop.max_milestone_retries"].(int),
		OnMilestoneFailure:  typed["stop.on_milestone_failure"].(string),
		MaxConsecutiveFails: typed["stop.max_consecutive_fails"].(int),
		MaxRetryRate:        typed["stop.max_retry_rate"].(float64),
		MaxRejectRate:       typed["stop.max_reject_rate"].(float64),
		MinAttemptsForRates: typed["stop.min_attempts_for_rates"].(int),
		CircuitBreaker:      typed["stop.circuit_breaker"].(int),
		SameError:           typed["stop.same_error"].(int),
		Noop:                typed["stop.noop"].(int),
		NoProgress:          typed["stop.no_progress"].(int),
		MaxEdge:             typed["stop.max_edge"].(int),
		MaxReviewRounds:     typed["stop.max_review_rounds"].(int),
		Success:             typed["stop.success"].([]stopconditions.Condition),
		Failure:             typed["stop.failure"].([]stopconditions.Condition),
		Conditions:          typed["stop.conditions"].([]stopconditions.Condition),
	}
	c.Resume = Resume{
		MaxAutoResumes: typed["resume.max_auto_resumes"].(int),
		Backoff:        typed["resume.backoff"].([]time.Duration),
		MaxWait:        typed["resume.max_wait"].(time.Duration),
	}
	// Every rule was checked above with its source; this catches a rule the
	// stop package refuses that this package let through.
	if err := c.Stop.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// resolve checks one value and returns it typed and in its Raw form.
func resolve(k kind, src source, value any) (typed, raw any, err error) {
	switch k {
	case kindString:
		s, err := parseString(src, value)
		return s, s, err
	case kindAgentKind:
		s, err := parseChoice(src, value, agentKinds)
		return s, s, err
	case kindOnFailure:
		s, err := parseChoice(src, value, []string{stopconditions.OnFailureStop, stopconditions.OnFailureSkip})
		return s, s, err
	case kindStrings:
		l, err := parseStrings(src, value)
		return l, l, err
	case kindGlobs:
		l, err := parseGlobs(src, value)
		return l, l, err
	case kindDuration:
		d, err := parseDuration(src, value)
		return d, formatDuration(d), err
	case kindBudgetTime:
		d, err := parseBudgetTime(src, value)
		return d, formatDuration(d), err
	case kindDurations:
		ds, err := parseDurations(src, value)
		shown := make([]string, len(ds))
		for i, d := range ds {
			shown[i] = formatDuration(d)
		}
		return ds, shown, err
	case kindCount:
		n, err := parseInt(src, value)
		return n, n, err
	case kindCount64:
		n, err := parseCount(src, value)
		return n, n, err
	case kindAmount:
		f, err := parseAmount(src, value)
		return f, f, err
	case kindRate:
		f, err := parseRate(src, value)
		return f, f, err
	case kindBool:
		b, err := parseBool(src, value)
		return b, b, err
	case kindConditions:
		return parseConditions(src, value)
	}
	return nil, nil, stopreasons.Errorf(stopreasons.InternalError, "config key %s has no kind", src.key)
}

// parseConditions decodes a list of custom conditions; the decoder's errors
// name the entry ("stop.success[1].pattern: ..."), to which this adds where
// the list came from.
func parseConditions(src source, value any) ([]stopconditions.Condition, any, error) {
	items, ok := listOf(value)
	if !ok {
		return nil, nil, src.invalid(value, "not a list of conditions (write e.g. [{type: all_tests_pass}])")
	}
	items = normalize(items).([]any)
	conds, err := stopconditions.DecodeList(src.key, items)
	if err != nil {
		return nil, nil, stopreasons.Wrap(stopreasons.ConfigInvalid, err, "%s", src.prefix())
	}
	if conds == nil {
		conds = []stopconditions.Condition{}
	}
	return conds, items, nil
}

// formatDuration writes a duration the way a person would: 30m, 1h30m, 5s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Limits returns the budget as the stop rules take it.
func (c *Config) Limits() stopconditions.Limits {
	return stopconditions.Limits{
		Time:          c.Budget.Time,
		MaxTicks:      c.Budget.MaxTicks,
		MaxIterations: c.Budget.MaxIterations,
		MaxCostUSD:    c.Budget.MaxCostUSD,
		MaxTokens:     c.Budget.MaxTokens,
	}
}

// Hash is the hex sha256 of the resolved settings without budget.* and
// resume.*: a resume may grant more budget or change the retry policy
// without that counting as a changed config.
func (c *Config) Hash() string {
	rest := make(map[string]any, len(c.Raw))
	for section, value := range c.Raw {
		if section == "budget" || section == "resume" {
			continue
		}
		rest[section] = value
	}
	// encoding/json writes map keys sorted, which makes the form canonical.
	data, err := json.Marshal(rest)
	if err != nil {
		// Raw holds only plain data built by Load; a value json cannot
		// write still gets a digest of its printed form rather than none.
		data = []byte(show(rest))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
