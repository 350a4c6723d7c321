package stopconditions

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// fieldsByType lists the fields each condition type takes besides `type`.
var fieldsByType = map[string][]string{
	TypeMaxIterations:     {"count"},
	TypeMaxDuration:       {"duration"},
	TypeTestFailureStreak: {"count"},
	TypeAllTestsPass:      nil,
	TypeSpecificTestsPass: {"tests"},
	TypeNoProgress:        {"iterations"},
	TypeFileCreated:       {"path"},
	TypeFileContains:      {"path", "content"},
	TypeOutputPattern:     {"pattern", "regex"},
	TypeOnError:           {"pattern"},
	TypeCustomScript:      {"script", "args", "timeout"},
	TypeUserSignal:        nil,
	TypeAll:               {"conditions"},
	TypeAny:               {"conditions"},
	TypeNot:               {"condition"},
	TypeNever:             nil,
}

// Types lists the condition types in alphabetical order.
func Types() []string {
	out := make([]string, 0, len(fieldsByType))
	for t := range fieldsByType {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// invalid is a config_invalid error about the value at path.
func invalid(path, format string, args ...any) error {
	return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s: %s", path, fmt.Sprintf(format, args...))
}

// DecodeList decodes a list of conditions as yaml.v3 or viper give it; nil is
// an empty list. path names the list in the config, e.g. "stop.success".
func DecodeList(path string, raw any) ([]Condition, error) {
	var items []any
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case []any:
		items = v
	case []map[string]any:
		for _, m := range v {
			items = append(items, m)
		}
	default:
		return nil, invalid(path, "must be a list of conditions, each with a type, e.g. [{type: all_tests_pass}]; got %s", describe(raw))
	}
	out := make([]Condition, 0, len(items))
	for i, item := range items {
		c, err := Decode(fmt.Sprintf("%s[%d]", path, i), item)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Decode decodes one condition from its YAML-decoded form; path is where it
// sits in the config, e.g. "stop.success[1]". Every rejection is a
// config_invalid *stopreasons.Error whose message starts with the path of the
// bad field and says what is allowed.
func Decode(path string, raw any) (Condition, error) {
	m, err := asMap(path, raw)
	if err != nil {
		return nil, err
	}
	allowedTypes := strings.Join(Types(), ", ")
	rawType, ok := m["type"]
	if !ok {
		return nil, invalid(path+".type", "missing; every condition needs a type, one of %s", allowedTypes)
	}
	typ, ok := rawType.(string)
	if !ok {
		return nil, invalid(path+".type", "must be text, one of %s; got %s", allowedTypes, describe(rawType))
	}
	fields, ok := fieldsByType[typ]
	if !ok {
		return nil, invalid(path+".type", "unknown condition type %q; allowed: %s", typ, allowedTypes)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "type" && !contains(fields, k) {
			allowed := "type"
			if len(fields) > 0 {
				allowed += ", " + strings.Join(fields, ", ")
			}
			return nil, invalid(path+"."+k, "unknown field for a %s condition; allowed: %s", typ, allowed)
		}
	}
	f := fieldReader{path: path, m: m}
	switch typ {
	case TypeMaxIterations:
		n, err := f.count("count")
		return maxIterations{count: n}, err
	case TypeMaxDuration:
		d, err := f.duration("duration", time.Minute, true)
		return maxDuration{d: d}, err
	case TypeTestFailureStreak:
		n, err := f.count("count")
		return testFailureStreak{count: n}, err
	case TypeAllTestsPass:
		return allTestsPass{}, nil
	case TypeSpecificTestsPass:
		tests, err := f.stringList("tests", true)
		return specificTestsPass{tests: tests}, err
	case TypeNoProgress:
		n, err := f.count("iterations")
		return noProgress{iterations: n}, err
	case TypeFileCreated:
		p, err := f.repoPath("path")
		return fileCreated{path: p}, err
	case TypeFileContains:
		p, err := f.repoPath("path")
		if err != nil {
			return nil, err
		}
		content, err := f.text("content", true)
		return fileContains{path: p, content: content}, err
	case TypeOutputPattern:
		return f.outputPattern()
	case TypeOnError:
		return f.onError()
	case TypeCustomScript:
		return f.customScript()
	case TypeUserSignal:
		return userSignal{}, nil
	case TypeAll, TypeAny:
		conds, err := f.conditions("conditions")
		if err != nil {
			return nil, err
		}
		if typ == TypeAll {
			return all{conditions: conds}, nil
		}
		return anyOf{conditions: conds}, nil
	case TypeNot:
		raw, ok := m["condition"]
		if !ok {
			return nil, invalid(path+".condition", "missing; a not condition wraps one condition, e.g. {type: not, condition: {type: all_tests_pass}}")
		}
		sub, err := Decode(path+".condition", raw)
		if err != nil {
			return nil, err
		}
		return not{condition: sub}, nil
	}
	return never{}, nil
}

// asMap accepts the mapping forms yaml.v3 (map[string]any, or map[any]any
// for non-text keys) and viper give.
func asMap(path string, raw any) (map[string]any, error) {
	switch v := raw.(type) {
	case map[string]any:
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, val := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, invalid(path, "field names must be text; got %s", describe(k))
			}
			m[ks] = val
		}
		return m, nil
	}
	return nil, invalid(path, "a condition must be a mapping with a type, e.g. {type: all_tests_pass}; got %s", describe(raw))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describe names the kind of a decoded value in the words of YAML, for
// messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing (null)"
	case string:
		return fmt.Sprintf("text %q", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return fmt.Sprintf("number %v", x)
	case []any, []map[string]any, []string:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	}
	return fmt.Sprintf("a value of type %T", v)
}

// fieldReader reads the fields of one condition's mapping.
type fieldReader struct {
	path string
	m    map[string]any
}

func (f fieldReader) at(key string) string { return f.path + "." + key }

// count reads a required whole number of at least 1. Text holding a number is
// accepted, since environment variables give all values as text.
func (f fieldReader) count(key string) (int, error) {
	raw, ok := f.m[key]
	if !ok {
		return 0, invalid(f.at(key), "missing; give a whole number of at least 1")
	}
	n, ok := toInt(raw)
	if !ok {
		return 0, invalid(f.at(key), "must be a whole number of at least 1; got %s", describe(raw))
	}
	if n < 1 {
		return 0, invalid(f.at(key), "%d is too small; give a whole number of at least 1", n)
	}
	return n, nil
}

func toInt(raw any) (int, bool) {
	var f float64
	switch v := raw.(type) {
	case int:
		return v, true
	case int8:
		return int(v), true
	case int16:
		return int(v), true
	case int32:
		return int(v), true
	case int64:
		f = float64(v)
	case uint:
		f = float64(v)
	case uint8:
		return int(v), true
	case uint16:
		return int(v), true
	case uint32:
		f = float64(v)
	case uint64:
		f = float64(v)
	case float32:
		f = float64(v)
	case float64:
		f = v
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return 0, false
	}
	return int(f), true
}

// duration reads a positive duration such as "10m" or "1h30m"; a bare number
// is taken in bareUnit.
func (f fieldReader) duration(key string, bareUnit time.Duration, required bool) (time.Duration, error) {
	raw, ok := f.m[key]
	if !ok {
		if required {
			return 0, invalid(f.at(key), "missing; give a duration such as 10m or 1h30m")
		}
		return 0, nil
	}
	var d time.Duration
	if s, isText := raw.(string); isText {
		s = strings.TrimSpace(s)
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			raw = n
		} else {
			d, err = time.ParseDuration(s)
			if err != nil {
				return 0, invalid(f.at(key), "%q is not a duration; use a number with a unit such as 90s, 10m or 1h30m", s)
			}
		}
	}
	if _, isText := raw.(string); !isText {
		n, ok := toFloat(raw)
		if !ok {
			return 0, invalid(f.at(key), "must be a duration such as 10m; got %s", describe(raw))
		}
		// Refuse what time.Duration cannot hold rather than wrap around.
		if n*float64(bareUnit) >= math.MaxInt64 {
			return 0, invalid(f.at(key), "%v is too long; use a duration such as 10m or 24h", n)
		}
		d = time.Duration(n * float64(bareUnit))
	}
	if d <= 0 {
		return 0, invalid(f.at(key), "must be positive; use a duration such as 10m")
	}
	return d, nil
}

func toFloat(raw any) (float64, bool) {
	switch v := raw.(type) {
	case float64:
		return v, !math.IsNaN(v)
	case float32:
		return float64(v), !math.IsNaN(float64(v))
	}
	if n, ok := toInt(raw); ok {
		return float64(n), true
	}
	return 0, false
}

// text reads a string field; a required one may not be empty.
func (f fieldReader) text(key string, required bool) (string, error) {
	raw, ok := f.m[key]
	if !ok {
		if required {
			return "", invalid(f.at(key), "missing; give non-empty text")
		}
		return "", nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", invalid(f.at(key), "must be text; got %s", describe(raw))
	}
	if required && s == "" {
		return "", invalid(f.at(key), "is empty; give non-empty text")
	}
	return s, nil
}

func (f fieldReader) boolean(key string) (bool, error) {
	raw, ok := f.m[key]
	if !ok {
		return false, nil
	}
	switch v := raw.(type) {
	case bool:
		return v, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b, nil
		}
	}
	return false, invalid(f.at(key), "must be true or false; got %s", describe(raw))
}

// stringList reads a list of non-empty strings; a required one may not be
// empty.
func (f fieldReader) stringList(key string, required bool) ([]string, error) {
	raw, ok := f.m[key]
	if !ok || raw == nil {
		if required {
			return nil, invalid(f.at(key), "missing; give a list of text, e.g. [\"go test ./...\"]")
		}
		return nil, nil
	}
	var items []any
	switch v := raw.(type) {
	case []any:
		items = v
	case []string:
		for _, s := range v {
			items = append(items, s)
		}
	default:
		return nil, invalid(f.at(key), "must be a list of text; got %s", describe(raw))
	}
	if required && len(items) == 0 {
		return nil, invalid(f.at(key), "is empty; give at least one entry")
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, ok := item.(string)
		if !ok {
			return nil, invalid(fmt.Sprintf("%s[%d]", f.at(key), i), "must be text; got %s", describe(item))
		}
		if s == "" {
			return nil, invalid(fmt.Sprintf("%s[%d]", f.at(key), i), "is empty; give non-empty text")
		}
		out = append(out, s)
	}
	return out, nil
}

// repoPath reads a path relative to the repository that stays inside it.
func (f fieldReader) repoPath(key string) (string, error) {
	p, err := f.text(key, true)
	if err != nil {
		return "", err
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return "", invalid(f.at(key), "%q is absolute; give a path relative to the repository, e.g. build/out.txt", p)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", invalid(f.at(key), "%q leaves the repository; give a path inside it", p)
	}
	if strings.ContainsRune(p, 0) {
		return "", invalid(f.at(key), "%q holds a NUL byte; give a plain file path", p)
	}
	return p, nil
}

func (f fieldReader) regexp(key string) (*regexp.Regexp, error) {
	pattern, err := f.text(key, true)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		msg := err.Error()
		// regexp's message repeats "error parsing regexp: "; the path says
		// what it is already.
		msg = strings.TrimPrefix(msg, "error parsing regexp: ")
		return nil, invalid(f.at(key), "regex %q: %s; give a valid Go (RE2) regular expression", pattern, msg)
	}
	return re, nil
}

func (f fieldReader) outputPattern() (Condition, error) {
	isRegex, err := f.boolean("regex")
	if err != nil {
		return nil, err
	}
	if !isRegex {
		p, err := f.text("pattern", true)
		return outputPattern{pattern: p}, err
	}
	re, err := f.regexp("pattern")
	if err != nil {
		return nil, err
	}
	return outputPattern{pattern: re.String(), re: re}, nil
}

func (f fieldReader) onError() (Condition, error) {
	if _, ok := f.m["pattern"]; !ok {
		return onError{}, nil
	}
	re, err := f.regexp("pattern")
	return onError{re: re}, err
}

func (f fieldReader) customScript() (Condition, error) {
	script, err := f.text("script", true)
	if err != nil {
		return nil, err
	}
	args, err := f.stringListAllowEmptyItems("args")
	if err != nil {
		return nil, err
	}
	timeout, err := f.duration("timeout", time.Second, false)
	if err != nil {
		return nil, err
	}
	if timeout == 0 {
		timeout = DefaultScriptTimeout
	}
	return customScript{script: script, args: args, timeout: timeout}, nil
}

// stringListAllowEmptyItems reads an optional list of text where an empty
// entry is meaningful (an empty argument).
func (f fieldReader) stringListAllowEmptyItems(key string) ([]string, error) {
	raw, ok := f.m[key]
	if !ok || raw == nil {
		return nil, nil
	}
	items, ok := raw.([]any)
	if !ok {
		if ss, isStrings := raw.([]string); isStrings {
			return ss, nil
		}
		return nil, invalid(f.at(key), "must be a list of text; got %s", describe(raw))
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		switch v := item.(type) {
		case string:
			out = append(out, v)
		case int, int64, float64, bool:
			// YAML reads `args: [--count, 3]` as a number; the script gets
			// the text the user wrote.
			out = append(out, fmt.Sprint(v))
		default:
			return nil, invalid(fmt.Sprintf("%s[%d]", f.at(key), i), "must be text; got %s", describe(item))
		}
	}
	return out, nil
}

func (f fieldReader) conditions(key string) ([]Condition, error) {
	raw, ok := f.m[key]
	if !ok {
		return nil, invalid(f.at(key), "missing; give a list of at least one condition")
	}
	conds, err := DecodeList(f.at(key), raw)
	if err != nil {
		return nil, err
	}
	if len(conds) == 0 {
		return nil, invalid(f.at(key), "is empty; give a list of at least one condition")
	}
	return conds, nil
}
