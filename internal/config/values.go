package config

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// origin says where a value came from, so that an error can send the user
// to the one place to fix it.
type origin int

const (
	fromDefault origin = iota
	fromFile
	fromEnv
	fromFlag
)

// source is the place one key's value was set.
type source struct {
	origin origin
	name   string // the file as shown, the variable, or the flag as typed
	key    string // the dotted key
}

// invalid returns the config_invalid error for value, whose problem reads
// after "is": "out of range (0 to 1)", "not a whole number".
//
//	runr.yaml: stop.max_retry_rate: 1.5 is out of range (0 to 1)
//	RUNR_BUDGET_TIME: banana is not a duration (...)
//	--time banana: not a duration (...)
func (s source) invalid(value any, problem string) error {
	shown := show(value)
	switch s.origin {
	case fromFile:
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s: %s: %s is %s", s.name, s.key, shown, problem)
	case fromEnv:
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s: %s is %s", s.name, shown, problem)
	case fromFlag:
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s %s: %s", s.name, shown, problem)
	}
	// A default that does not pass its own check is a bug in this package.
	return stopreasons.Errorf(stopreasons.InternalError, "default of %s: %s is %s", s.key, shown, problem)
}

// prefix names the source in front of an error that names the key itself.
func (s source) prefix() string {
	switch s.origin {
	case fromFile, fromEnv, fromFlag:
		return s.name
	}
	return "default"
}

// show renders a value as the user wrote it.
func show(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case nil:
		return "null"
	case []any, []string, map[string]any:
		if b, err := json.Marshal(x); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}

const (
	durationHint   = "not a duration (use a number with a unit: 90s, 5m, 1h30m)"
	budgetTimeHint = "not a duration (use 30m, 1h30m, or minutes as a number)"
)

// ParseBudgetTime reads a time budget: a Go duration ("30m", "1h30m") or a
// bare number of minutes ("45"); it must be greater than zero. The error is
// config_invalid and names only the problem, so that the caller can say where
// the value came from ("--time banana: " + err).
func ParseBudgetTime(s string) (time.Duration, error) {
	d, problem := budgetTime(s)
	if problem != "" {
		return 0, stopreasons.Errorf(stopreasons.ConfigInvalid, "%s", problem)
	}
	return d, nil
}

func budgetTime(s string) (time.Duration, string) {
	s = strings.TrimSpace(s)
	if m, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return 0, budgetTimeHint
		}
		if m <= 0 {
			return 0, "not positive (give a time greater than 0, e.g. 30m)"
		}
		if m >= float64(math.MaxInt64)/float64(time.Minute) {
			return 0, "too large (the longest time is about 290 years)"
		}
		return time.Duration(m * float64(time.Minute)), ""
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, budgetTimeHint
	}
	if d <= 0 {
		return 0, "not positive (give a time greater than 0, e.g. 30m)"
	}
	return d, ""
}

// parseDuration reads a duration that needs its unit: a bare "600" could
// mean seconds or minutes, so it is refused rather than guessed.
func parseDuration(src source, v any) (time.Duration, error) {
	s, ok := scalarString(v)
	if !ok {
		return 0, src.invalid(v, durationHint)
	}
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, src.invalid(v, "missing a unit (write e.g. "+s+"s or "+s+"m)")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, src.invalid(v, durationHint)
	}
	if d <= 0 {
		return 0, src.invalid(v, "not positive (give a duration greater than 0, e.g. 5m)")
	}
	return d, nil
}

func parseBudgetTime(src source, v any) (time.Duration, error) {
	s, ok := scalarString(v)
	if !ok {
		return 0, src.invalid(v, budgetTimeHint)
	}
	d, problem := budgetTime(s)
	if problem != "" {
		return 0, src.invalid(v, problem)
	}
	return d, nil
}

func parseDurations(src source, v any) ([]time.Duration, error) {
	items, ok := listOf(v)
	if !ok {
		return nil, src.invalid(v, "not a list of durations (write e.g. [30s, 2m, 5m])")
	}
	if len(items) == 0 {
		return nil, src.invalid(v, "empty (give at least one duration, e.g. [30s, 2m, 5m])")
	}
	out := make([]time.Duration, len(items))
	for i, item := range items {
		d, err := parseDuration(src.item(i), item)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// item is the source of one list element: the key gains its index, so that
// a file error reads "scope.allow[2]: ...".
func (s source) item(i int) source {
	s.key = fmt.Sprintf("%s[%d]", s.key, i)
	return s
}

// parseCount reads a whole number of 0 or more.
func parseCount(src source, v any) (int64, error) {
	n, err := parseWhole(src, v)
	if err == nil && n < 0 {
		return 0, src.invalid(v, "negative (use 0 or more; 0 turns the limit off)")
	}
	return n, err
}

// parseWhole reads a whole number, of either sign: the caller says which
// are allowed, so that its advice names a value it accepts.
func parseWhole(src source, v any) (int64, error) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		if x > math.MaxInt64 {
			return 0, src.invalid(v, "too large")
		}
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, src.invalid(v, "not a whole number")
		}
		n = int64(x)
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, src.invalid(v, "not a whole number")
		}
		n = i
	default:
		return 0, src.invalid(v, "not a whole number")
	}
	return n, nil
}

func parseInt(src source, v any) (int, error) {
	n, err := parseCount(src, v)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt32 {
		return 0, src.invalid(v, "too large")
	}
	return int(n), nil
}

func parseNumber(src source, v any) (float64, error) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, src.invalid(v, "not a number")
		}
		f = p
	default:
		return 0, src.invalid(v, "not a number")
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, src.invalid(v, "not a finite number")
	}
	return f, nil
}

func parseAmount(src source, v any) (float64, error) {
	f, err := parseNumber(src, v)
	if err != nil {
		return 0, err
	}
	if f < 0 {
		return 0, src.invalid(v, "negative (use 0 or more)")
	}
	return f, nil
}

func parseRate(src source, v any) (float64, error) {
	f, err := parseNumber(src, v)
	if err != nil {
		return 0, err
	}
	if f < 0 || f > 1 {
		return 0, src.invalid(v, "out of range (0 to 1)")
	}
	return f, nil
}

func parseBool(src source, v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			return b, nil
		}
	}
	return false, src.invalid(v, "not true or false")
}

func parseString(src source, v any) (string, error) {
	s, ok := scalarString(v)
	if !ok {
		return "", src.invalid(v, "not a single value (write it as text)")
	}
	return s, nil
}

// parseChoice reads one of the allowed words; with none allowed, any text.
func parseChoice(src source, v any, allowed []string) (string, error) {
	s, err := parseString(src, v)
	if err != nil || len(allowed) == 0 || slices.Contains(allowed, s) {
		return s, err
	}
	problem := "not one of " + strings.Join(allowed, ", ")
	if near := Closest(s, allowed, 1); len(near) > 0 {
		problem += " (did you mean " + near[0] + "?)"
	}
	return "", src.invalid(v, problem)
}

// parseChoices reads a list of the allowed words, each at most once.
func parseChoices(src source, v any, allowed []string) ([]string, error) {
	words, err := parseStrings(src, v)
	if err != nil {
		return nil, err
	}
	for i, w := range words {
		if _, err := parseChoice(src.item(i), w, allowed); err != nil {
			return nil, err
		}
		if slices.Contains(words[:i], w) {
			return nil, src.item(i).invalid(w, "listed twice")
		}
	}
	return words, nil
}

// envVarName is what a shell accepts as a variable name.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseEnvVarName reads the name of an environment variable, or "". A URL
// or other value in its place is refused without being repeated, since it
// may be a secret.
func parseEnvVarName(src source, v any) (string, error) {
	s, err := parseString(src, v)
	if err != nil || s == "" || envVarName.MatchString(s) {
		return s, err
	}
	return "", src.invalid("(value not shown)", "not the name of an environment variable (write the variable's name, e.g. RUNR_WEBHOOK_URL, and put the URL in that variable)")
}

// parseStrings reads a list of strings. A flag may give a single string for
// a list key (one --verify); a file or variable must write a list, because a
// bare string there is more often a mistake than a one-element list.
func parseStrings(src source, v any) ([]string, error) {
	if s, ok := v.(string); ok && src.origin == fromFlag {
		return []string{s}, nil
	}
	items, ok := listOf(v)
	if !ok {
		return nil, src.invalid(v, `not a list (write e.g. ["go test ./..."])`)
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, ok := scalarString(item)
		if !ok {
			return nil, src.item(i).invalid(item, "not a string")
		}
		out[i] = s
	}
	return out, nil
}

func parseGlobs(src source, v any) ([]string, error) {
	globs, err := parseStrings(src, v)
	if err != nil {
		return nil, err
	}
	for i, g := range globs {
		if g == "" || !doublestar.ValidatePattern(g) {
			return nil, src.item(i).invalid(g, "not a valid glob (e.g. internal/**, *.go, docs/*.md)")
		}
	}
	return globs, nil
}

// listOf returns the elements of a list value, whatever its Go type.
func listOf(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// scalarString turns a scalar into its text: YAML reads `model: 4` as an int.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x), true
	}
	return "", false
}

// sizeUnits are the units a size may be written in, the largest first.
var sizeUnits = []struct {
	name string
	n    int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// MinLogCap is the smallest agent.log_cap: room for a head, a tail and
// the line that says what was left out between them.
const MinLogCap = 1 << 10

// parseSize reads a size: a whole number of bytes, or one of KiB, MiB or
// GiB (64MiB); at least MinLogCap.
func parseSize(src source, v any) (int64, error) {
	const advice = "not a size (write e.g. 64MiB, 512KiB or 1GiB)"
	var n int64
	switch x := v.(type) {
	case string:
		text := strings.TrimSpace(x)
		mult := int64(1)
		for _, u := range sizeUnits {
			if num, ok := strings.CutSuffix(text, u.name); ok {
				text, mult = strings.TrimSpace(num), u.n
				break
			}
		}
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil || i < 0 {
			return 0, src.invalid(v, advice)
		}
		if i > math.MaxInt64/mult {
			return 0, src.invalid(v, "too large")
		}
		n = i * mult
	default:
		i, err := parseWhole(src, v)
		if err != nil {
			return 0, src.invalid(v, advice)
		}
		n = i
	}
	if n < MinLogCap {
		return 0, src.invalid(v, "below 1KiB (a log needs room for its head, its tail and the note between them)")
	}
	return n, nil
}
