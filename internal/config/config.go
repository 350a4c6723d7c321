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
	"strconv"
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
	Sandbox    Sandbox
	Notify     Notify
	Parallel   Parallel
	Telemetry  Telemetry

	// File is the config file that was read, "" when there was none.
	File string
	// Explicit lists, in the order of Keys(), the keys that the config
	// file, a RUNR_* variable or a flag set rather than leaving them at
	// their default; a key set to an empty list is one of them.
	Explicit []string
	// Raw holds the resolved settings as plain nested data, in the shape of
	// runr.yaml: durations as strings, custom conditions as written. It is
	// what a run records as config.json and what Hash digests.
	Raw map[string]any
	// Warnings are for stderr: RUNR_ variables that look like a misspelt
	// key (EnvWarnings). They change nothing in the config.
	Warnings []string
}

// Agent is the `agent:` section.
type Agent struct {
	Kind              string
	Command, Args     []string
	Model             string
	PermissionMode    string
	Timeout           time.Duration
	IdleTimeout       time.Duration
	LogCap            int64 // agent.log_cap: the most one process's log keeps
	KillGrace         time.Duration
	CompletionPromise string
	ContinueSession   bool
	Price             Price
	// Fallback are the agents to switch to, in order, when the current one
	// hits a rate or usage limit that resets beyond resume.max_wait, or its
	// program is missing.
	Fallback []FallbackAgent
	// ResultGrace is how long an agent that printed its final result may
	// take to exit before runr ends it; its result counts.
	ResultGrace time.Duration
}

// FallbackAgent is one entry of agent.fallback. The other agent.* settings
// (timeouts, permission_mode, completion_promise) are shared; agent.price
// applies to the primary agent only, a fallback's calls are priced from
// runr's table for its model.
type FallbackAgent struct {
	Kind    string   `json:"kind"`
	Model   string   `json:"model,omitempty"`
	Args    []string `json:"args,omitempty"`
	Command []string `json:"command,omitempty"` // kind command: its argv
}

// FallbackFields are the keys an entry of agent.fallback may hold.
var FallbackFields = []string{"kind", "model", "args", "command"}

// Price is agent.price: USD per million tokens, to estimate the cost of
// agents whose CLI reports none.
type Price struct {
	InputPerMTok, OutputPerMTok float64
}

// Verify is the `verify:` section.
type Verify struct {
	Commands []string
	Timeout  time.Duration
	// RequireTests is one of RequireTestsModes: whether a passing verify
	// whose test runners ran no test fails the attempt.
	RequireTests string
	Coverage     Coverage
}

// Coverage is `verify.coverage:`: the profiles verify writes and the share
// of the milestone's changed executable lines it must run.
type Coverage struct {
	// Profiles are globs relative to the work tree, or under
	// $RUNR_COVERAGE_DIR when they start with it.
	Profiles []string
	// MinChanged is a fraction 0..1; 0 turns the check off.
	MinChanged float64
}

// verify.require_tests values: auto judges only where a test runner's
// summary was recognised, on also fails a verify where none was, off
// never looks.
const (
	RequireTestsAuto = "auto"
	RequireTestsOn   = "on"
	RequireTestsOff  = "off"
)

// RequireTestsModes are the values verify.require_tests takes.
var RequireTestsModes = []string{RequireTestsAuto, RequireTestsOn, RequireTestsOff}

// Review is the `review:` section.
type Review struct {
	Command []string
}

// Scope is the `scope:` section.
type Scope struct {
	Allow, Deny []string
	// Protect matches files that, when they exist at the start of the run,
	// the agent may not modify, delete or rename; new files may match.
	Protect   []string
	Lockfiles []string
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

// Sandbox is the `sandbox:` section: how the agent's process tree is
// confined (DESIGN §10; docs/security.md).
type Sandbox struct {
	Mode string // one of SandboxModes
	// Writable are paths the agent may write besides the work tree and its
	// TMPDIR, as written: absolute, ~/..., or relative to the repository.
	Writable []string
}

// The values of sandbox.mode.
const (
	SandboxOff  = "off"
	SandboxAuto = "auto"
	SandboxOn   = "on"
)

// SandboxModes are the values sandbox.mode takes.
var SandboxModes = []string{SandboxOff, SandboxAuto, SandboxOn}

// Notify is the `notify:` section: who is told when a run stops. The
// webhook's URL is read from the variable WebhookURLEnv names when a
// notification is sent; only the name is part of the config.
type Notify struct {
	Command       []string
	WebhookURLEnv string
	Format        string   // one of NotifyFormats
	On            []string // of NotifyEvents
	Timeout       time.Duration
}

// Telemetry is the `telemetry:` section: where OpenTelemetry traces and
// metrics go, and how long their flush may delay runr's exit.
type Telemetry struct {
	// OTLPEndpoint is the collector's base URL; "" leaves it to
	// OTEL_EXPORTER_OTLP_ENDPOINT, and with both unset telemetry is off.
	OTLPEndpoint string
	Timeout      time.Duration
}

// The values of notify.format and notify.on.
const (
	NotifyJSON    = "json"
	NotifySlack   = "slack"
	NotifyDiscord = "discord"
	NotifyNtfy    = "ntfy"

	NotifyOnStop      = "stop"
	NotifyOnFailure   = "failure"
	NotifyOnSuccess   = "success"
	NotifyOnMilestone = "milestone"
)

// NotifyFormats are the bodies a webhook can be sent; NotifyEvents what
// notify.on may list.
var (
	NotifyFormats = []string{NotifyJSON, NotifySlack, NotifyDiscord, NotifyNtfy}
	NotifyEvents  = []string{NotifyOnStop, NotifyOnFailure, NotifyOnSuccess, NotifyOnMilestone}
)

// Parallel is the `parallel:` section: milestones worked at once in
// worktrees and merged through a verified queue (DESIGN §11).
type Parallel struct {
	Workers     int // 1: the sequential run
	MaxRequeues int // returns after a failed merge before merge_conflict
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
	// AgentKinds are the values agent.kind accepts, in the order a message
	// lists them (agents.Kinds()). The adapters own that list; without it
	// any kind loads, and only the adapter lookup refuses an unknown one.
	AgentKinds []string
	// Show names the config file in messages; nil: relative to RepoRoot
	// when it lies inside.
	Show func(path string) string
}

// Load resolves the configuration. RUNR_* variables that name no key are
// ignored, since runr sets some for its children; one that looks like a
// misspelt key gets a warning in Warnings. An empty variable counts as
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
		shown := shownName(path, opts.RepoRoot)
		if opts.Show != nil {
			shown = opts.Show(path)
		}
		set, err := readFile(path, shown)
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
	// at every underscore; mapping the names from Keys() is exact. The text
	// is checked later like a value from the file.
	for _, kv := range opts.Environ {
		name, raw, _ := strings.Cut(kv, "=")
		key, ok := envIndex[name]
		if !ok || raw == "" {
			continue
		}
		v.Set(key, raw)
		sources[key] = source{origin: fromEnv, name: name, key: key}
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

	values := make(map[string]any, len(keyDefs))
	for _, d := range keyDefs {
		values[d.name] = v.Get(d.name)
	}
	c, err := decode(values, sources, opts.AgentKinds)
	if err != nil {
		return nil, err
	}
	c.File = path
	for _, d := range keyDefs {
		if sources[d.name].origin != fromDefault {
			c.Explicit = append(c.Explicit, d.name)
		}
	}
	c.Warnings = EnvWarnings(opts.Environ)
	return c, nil
}

// nest turns dotted keys into nested maps in the shape of runr.yaml: what
// viper merges, what mapstructure decodes, and Raw.
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

// FormatSize writes a size in bytes the way runr.yaml takes it: 64MiB,
// 512KiB, or bytes when it is no whole number of KiB.
func FormatSize(n int64) string {
	for _, u := range sizeUnits {
		if n >= u.n && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// FormatDuration writes a duration the way a person would: 30m, 1h30m, 5s.
func FormatDuration(d time.Duration) string {
	return stopreasons.TrimDuration(d)
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

// Hash is the hex sha256 of the resolved settings without budget.*,
// resume.*, notify.* and telemetry.*: a resume may grant more budget, change
// the retry policy, who is told of a stop or where telemetry goes without
// that counting as a changed config.
func (c *Config) Hash() string { return HashRaw(c.Raw) }

// HashRaw is Hash of settings in Raw's shape, such as a run's config.json
// read back: the same settings give the same hash whether they were built
// by Load or decoded from JSON.
func HashRaw(raw map[string]any) string {
	rest := make(map[string]any, len(raw))
	for section, value := range raw {
		if section == "budget" || section == "resume" || section == "notify" || section == "telemetry" {
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
