// Package agents turns one headless call of an agent CLI (Claude Code, Codex,
// Gemini CLI, opencode, Aider, Qwen Code, or any command) into an argv to run and a
// streaming parser whose Result the supervisor can trust: success or error
// and its class, tokens, cost, session id, the final text and the completion
// signal. Adapters never start processes; memory stays bounded whatever the
// agent prints.
package agents

import (
	"math"
	"time"
)

// DefaultPromise is the completion promise used when Request.Promise is empty.
const DefaultPromise = "<promise>COMPLETE</promise>"

// DefaultPermissionMode is passed to claude when Request.PermissionMode is empty.
const DefaultPermissionMode = "bypassPermissions"

// maxFinalText bounds Result.FinalText: the end of the agent's final message
// is where the completion signal and the summary live.
const maxFinalText = 64 << 10

// Request is what the supervisor asks of one agent call.
type Request struct {
	Prompt         string   // the whole prompt text
	PromptFile     string   // a file holding the same prompt (for {prompt_file})
	Dir            string   // working directory
	Model          string   //
	PermissionMode string   // claude; default "bypassPermissions"
	Args           []string // agent.args: extra args for the adapters
	Command        []string // kind=command: argv; {prompt} / {prompt_file} substituted inside any argument, else the prompt goes on stdin
	SessionID      string   // continue this conversation when non-empty (see docs/agents.md for what each CLI supports)
	MaxBudgetUSD   float64  // claude: remaining cost budget, passed as --max-budget-usd when > 0
	MaxTurns       int      // 0: not passed
	Promise        string   // the completion promise, default DefaultPromise
}

func (r Request) promise() string {
	if r.Promise == "" {
		return DefaultPromise
	}
	return r.Promise
}

// Invocation is how to run one call.
type Invocation struct {
	Argv     []string
	Stdin    string   // piped to the process when UseStdin
	UseStdin bool     // false: stdin is /dev/null
	Env      []string // extra KEY=VALUE for this call (never secrets)
}

// Signal is what the agent said about its own work.
type Signal string

// Signals, from a line `RUNR_STATUS: done|blocked|failed` or the completion
// promise as a whole line.
const (
	SignalNone    Signal = ""
	SignalDone    Signal = "done"
	SignalBlocked Signal = "blocked"
	SignalFailed  Signal = "failed"
)

// Class says what kind of failure a call ended in.
type Class string

// Failure classes.
const (
	ClassNone      Class = ""
	ClassRateLimit Class = "rate_limit" // a provider rate or usage limit
	ClassAuth      Class = "auth"       // could not authenticate
	ClassBudget    Class = "budget"     // the CLI stopped on the cost cap runr passed it
	ClassServer    Class = "server"     // 5xx or overloaded after the CLI's own retries
	ClassError     Class = "error"      // any other failure
	ClassMaxTurns  Class = "max_turns"  // the CLI's turn limit ended the call
)

// Result is what one call amounted to.
type Result struct {
	// IsError is never the exit code alone: an error result with exit 0 is an
	// error, and exit != 0 is an error unless the adapter knows better.
	IsError          bool
	Class            Class
	ErrorText        string // one or a few lines, for people and for the error signature
	Turns            int
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	CostUSD          float64
	CostKnown        bool
	Model            string // the model the output named, if any (to price the call)
	SessionID        string
	FinalText        string    // the agent's final message, its last 64 KiB
	ResetAt          time.Time // when a rate or usage limit resets, if the CLI said
	Limit            LimitKind // the kind of limit a rate-limited or overloaded call hit
	Signal           Signal
	SignalText       string // the text after RUNR_STATUS: <signal>, e.g. what a blocked agent needs
}

// Usage is what a call has consumed so far, as its output told it.
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	CostUSD          float64 // the CLI's own figure, when CostKnown
	CostKnown        bool
	Model            string // the model the output named, if any
	// Final says the figures are the call's final totals: the CLI printed
	// its result, and the call's work is over (a budget they reach stops
	// the run after the call, not the call).
	Final bool
}

// Tokens is what budget.max_tokens counts: input plus output tokens.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// UsageReporter is a Parser that knows a call's usage while the call runs,
// so that a budget can stop it before it ends.
type UsageReporter interface {
	// UsageSoFar is the usage the lines taken so far report: the call's
	// totals up to now.
	UsageSoFar() Usage
}

// UsageStamper is a UsageReporter that can say cheaply whether its usage
// may have changed: the stamp changes whenever it may have. A caller that
// looks after every line of a call that prints millions of them (a
// command agent's output) compares stamps instead of usages.
type UsageStamper interface {
	UsageStamp() uint64
}

// UsageStamp returns p's usage stamp, and whether p has one.
func UsageStamp(p Parser) (uint64, bool) {
	if g, ok := p.(usageGuard); ok {
		p = g.Parser
	}
	if s, ok := p.(UsageStamper); ok {
		return s.UsageStamp(), true
	}
	return 0, false
}

// UsageSoFar returns the usage parser p has seen so far, and whether p
// reports usage while a call runs at all.
func UsageSoFar(p Parser) (Usage, bool) {
	if g, ok := p.(usageGuard); ok {
		p = g.Parser
	}
	r, ok := p.(UsageReporter)
	if !ok {
		return Usage{}, false
	}
	return sanitizeUsage(r.UsageSoFar()), true
}

// MaxUsageTokens and MaxUsageCostUSD bound what one call's usage may count:
// far beyond any real call, and small enough that a run's totals of
// millions of such calls still add up (int64 tokens that do not wrap to a
// negative total, a cost that does not sum to +Inf, which state.json
// cannot hold). A figure above them counts as them.
const (
	MaxUsageTokens  int64   = 1 << 40
	MaxUsageCostUSD float64 = 1e9
)

// sanitizeUsage keeps usage to amounts a budget can add up: the agent is
// untrusted, and a negative count or cost it prints would hand budget back,
// a huge one would overflow the run's totals.
func sanitizeUsage(u Usage) Usage {
	for _, n := range []*int64{&u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens} {
		*n = min(max(*n, 0), MaxUsageTokens)
	}
	if !(u.CostUSD >= 0) || math.IsInf(u.CostUSD, -1) || !u.CostKnown {
		u.CostUSD, u.CostKnown = 0, false
	}
	u.CostUSD = min(u.CostUSD, MaxUsageCostUSD)
	return u
}

// atLeast is usage u grown by v, field by field: every count the larger of
// the two, a cost once known kept (the larger when both are known), the
// model v names if it names one. A call's usage so far never goes down:
// figures that later output lowers, or a cost it stops giving, stay.
func (u Usage) atLeast(v Usage) Usage {
	u.InputTokens = max(u.InputTokens, v.InputTokens)
	u.OutputTokens = max(u.OutputTokens, v.OutputTokens)
	u.CacheReadTokens = max(u.CacheReadTokens, v.CacheReadTokens)
	u.CacheWriteTokens = max(u.CacheWriteTokens, v.CacheWriteTokens)
	if v.CostKnown {
		if u.CostKnown {
			u.CostUSD = max(u.CostUSD, v.CostUSD)
		} else {
			u.CostUSD, u.CostKnown = v.CostUSD, true
		}
	}
	if v.Model != "" {
		u.Model = v.Model
	}
	u.Final = u.Final || v.Final
	return u
}

// Usage is the usage a finished call reported.
func (r Result) Usage() Usage {
	return Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CacheReadTokens: r.CacheReadTokens,
		CacheWriteTokens: r.CacheWriteTokens, CostUSD: r.CostUSD, CostKnown: r.CostKnown, Model: r.Model}
}

// Adapter knows one agent CLI: everything runr does differently for one
// kind of agent is a method of its adapter, and nothing else in runr
// switches on a kind's name. An adapter is made known by its line in the
// registry (registry.go).
//
// Two facts only some CLIs have are optional methods: MayReportUsage (a
// command agent's usage depends on the program) and StartProblem (Claude
// Code refuses to start as root in some settings).
type Adapter interface {
	Kind() string
	// Program is the program runr looks up on PATH; "" when the kind has
	// no program of its own (a command agent without its argv).
	Program(req Request) string
	Invocation(req Request) (Invocation, error)
	NewParser(req Request) Parser
	// NewActivityReader reads the CLI's stream of events as activities,
	// paths under dir shown relative to it; nil when its output is plain
	// text, of which the latest line is shown instead.
	NewActivityReader(dir string) ActivityReader
	// VersionArgs prints the CLI's version; nil when there is none to ask.
	VersionArgs() []string
	// CredentialEnv names the environment variables that carry credentials.
	CredentialEnv() []string
	// ReportsCost says whether the CLI reports the cost in USD of every call;
	// without it runr can only estimate cost from tokens and agent.price.
	ReportsCost() bool
	// ReportsTokens says whether the CLI reports the tokens of a call.
	ReportsTokens() bool
	// InputHoldsCacheReads says whether the CLI counts the tokens read
	// from the cache inside its input tokens (as OpenAI's and Google's
	// APIs report them), where Anthropic's count them apart: a price then
	// applies to the input less the cache reads (Billable).
	InputHoldsCacheReads() bool
	// StatePaths are where the CLI keeps its own state under the user's
	// directories, which a sandboxed call must be able to write.
	StatePaths(u UserDirs) StatePaths
	// NestedSessionEnv names the variables by which the CLI marks the
	// commands its tools run as inside its session (see NestedSessionEnv).
	NestedSessionEnv() []string
	// GenAIProvider is the value of OpenTelemetry's gen_ai.provider.name
	// for the CLI's calls: the provider's well-known name where the CLI
	// talks to one provider, else the kind itself.
	GenAIProvider() string
}

// Parser reads one call's stdout as it streams.
type Parser interface {
	// Line takes one stdout line; it returns abort when it is already clear
	// the call cannot succeed, so the supervisor can stop the process early.
	Line(line []byte) (abort bool)
	// Finish takes the exit code and the tail of combined output.
	Finish(exitCode int, tail []byte) Result
}

// ChunkParser is a Parser that takes stdout as it is read, in chunks,
// besides its lines (Parser.Line gets the same bytes cut into lines): a
// parser that keeps the end of the output copies a chunk's last bytes, not
// every line.
type ChunkParser interface {
	Parser
	Chunk(p []byte)
}

// Chunk passes stdout chunks to the parser when it takes them.
func (p usageGuard) Chunk(b []byte) {
	if c, ok := p.Parser.(ChunkParser); ok {
		c.Chunk(b)
	}
}

// TakesChunks reports whether p wants stdout's chunks (ChunkParser).
func TakesChunks(p Parser) bool {
	if g, ok := p.(usageGuard); ok {
		p = g.Parser
	}
	_, ok := p.(ChunkParser)
	return ok
}

// LineStarter is a ChunkParser whose Line, once it takes stdout's chunks,
// needs only the lines that begin with a byte LineStarts marks.
type LineStarter interface {
	ChunkParser
	LineStarts() *[256]bool
}

// LineStarts returns the first bytes of the stdout lines p's Line needs
// when p takes stdout's chunks, or nil: it needs every line.
func LineStarts(p Parser) *[256]bool {
	if g, ok := p.(usageGuard); ok {
		p = g.Parser
	}
	if s, ok := p.(LineStarter); ok {
		return s.LineStarts()
	}
	return nil
}

// usageGuard keeps the usage a parser reports to amounts a budget can add
// up: the agent is untrusted, and a negative count or cost it prints would
// hand budget back. A cost that is no amount at all is not known, so runr
// estimates it from tokens where it can.
type usageGuard struct{ Parser }

func (p usageGuard) Finish(exitCode int, tail []byte) Result {
	res := p.Parser.Finish(exitCode, tail)
	u := sanitizeUsage(res.Usage())
	res.InputTokens, res.OutputTokens, res.CacheReadTokens, res.CacheWriteTokens = u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens
	res.CostUSD, res.CostKnown = u.CostUSD, u.CostKnown
	res.Turns = max(res.Turns, 0)
	// A reset is recorded to the second (RFC 3339 in the stop's details):
	// rounded up, so that a wait for it never ends before it.
	if !res.ResetAt.IsZero() {
		res.ResetAt = res.ResetAt.Add(time.Second - 1).Truncate(time.Second)
	}
	if res.Limit == LimitNone {
		res.Limit = limitKindOf(res)
	}
	return res
}
