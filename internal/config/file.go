package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// FileName is the config file runr reads from the repository root.
const FileName = "runr.yaml"

// fileSettings is what a config file set: its leaves by dotted key.
type fileSettings struct {
	path   string         // the file as read
	shown  string         // the file as named in messages
	values map[string]any // dotted key -> value as decoded
}

// findFile returns the config file to read, or "" when there is none: an
// explicit --config must exist, runr.yaml in the repository root may not.
func findFile(opts LoadOptions) (string, error) {
	if opts.ConfigFile != "" {
		info, err := os.Stat(opts.ConfigFile)
		if err != nil {
			return "", stopreasons.Errorf(stopreasons.ConfigInvalid,
				"--config %s: cannot read the config file (%v); check the path", opts.ConfigFile, unwrapPathError(err))
		}
		if info.IsDir() {
			return "", stopreasons.Errorf(stopreasons.ConfigInvalid,
				"--config %s: is a directory; give the path of a YAML file", opts.ConfigFile)
		}
		return opts.ConfigFile, nil
	}
	if opts.RepoRoot == "" {
		return "", nil
	}
	path := filepath.Join(opts.RepoRoot, FileName)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", stopreasons.Errorf(stopreasons.ConfigInvalid, "%s: cannot read the config file (%v)", path, unwrapPathError(err))
	}
	return path, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// shownName is how messages name the file: relative to the repository when
// it lies inside, so that runr.yaml in the root reads as "runr.yaml".
func shownName(path, repoRoot string) string {
	if repoRoot == "" {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// yamlLine matches the position yaml.v3 puts in its messages.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// maxFileBytes bounds what is read of a config file: --config /dev/zero must
// not fill runr's memory. A FIFO (--config <(...)) is read; it ends.
const maxFileBytes = 1 << 20

// readBounded reads at most maxFileBytes+1 bytes of path, refusing a
// device, which need never end.
func readBounded(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode()&fs.ModeDevice != 0 {
		return nil, errors.New("a device, not a file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFileBytes+1))
}

// readFile parses a config file and checks that it names only known keys.
func readFile(path, shown string) (*fileSettings, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, stopreasons.Errorf(stopreasons.ConfigInvalid, "%s: cannot read the config file (%v)", shown, unwrapPathError(err))
	}
	if len(data) > maxFileBytes {
		return nil, stopreasons.Errorf(stopreasons.ConfigInvalid, "%s: the config file is larger than %d MiB; give the YAML file of runr's settings", shown, maxFileBytes>>20)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(shown, err)
	}
	if err := oneDocument(dec, data, shown); err != nil {
		return nil, err
	}
	set := &fileSettings{path: path, shown: shown, values: map[string]any{}}
	if len(doc.Content) == 0 {
		return set, nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return set, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, stopreasons.Errorf(stopreasons.ConfigInvalid,
			"%s:%d: the file must be a mapping of settings (agent:, task:, verify:, ...)", shown, root.Line)
	}
	if err := set.walk(root, ""); err != nil {
		return nil, err
	}
	return set, nil
}

func syntaxError(shown string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s:%s: %s; fix the YAML syntax", shown, m[1], msg[len(m[0]):])
	}
	return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s: %s; fix the YAML syntax", shown, strings.TrimPrefix(msg, "yaml: "))
}

// endMarker is a YAML document end marker line.
var endMarker = regexp.MustCompile(`(?m)^\.\.\.(?:[ \t].*)?\r?$`)

// oneDocument refuses a second YAML document after the first: a parser that
// reads one document would silently drop every setting after a stray "---"
// or "...", stop rules included.
func oneDocument(dec *yaml.Decoder, data []byte, shown string) error {
	var next yaml.Node
	err := dec.Decode(&next)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err == nil {
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"%s:%d: a second YAML document starts here (---): runr reads one document, and would drop the settings after it; remove the separator and keep all settings in one mapping", shown, next.Line)
	}
	line := 0
	if loc := endMarker.FindIndex(data); loc != nil {
		line = bytes.Count(data[:loc[0]], []byte("\n")) + 1
	}
	if line == 0 {
		return syntaxError(shown, err)
	}
	return stopreasons.Errorf(stopreasons.ConfigInvalid,
		"%s:%d: the YAML document ends here (...) but more follows: runr reads one document, and would drop the settings after it; remove the end marker", shown, line)
}

// walk collects the leaves under a mapping node, refusing unknown keys so that
// a typo cannot silently leave a stop rule at its default.
func (set *fileSettings) walk(node *yaml.Node, prefix string) error {
	// yaml.v3 finds a repeated key only when decoding into a map, which
	// walking the nodes does not do.
	seen := map[string]int{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		name := k.Value
		if prefix != "" {
			name = prefix + "." + k.Value
		}
		if line, dup := seen[k.Value]; dup {
			return stopreasons.Errorf(stopreasons.ConfigInvalid,
				"%s:%d: %s is set twice (first on line %d); keep one", set.shown, k.Line, name, line)
		}
		seen[k.Value] = k.Line
		_, isKey := keyIndex[name]
		switch {
		case k.Kind != yaml.ScalarNode || strings.Contains(k.Value, "."):
			// A dotted key would be read by some tools as nested and by
			// others as literal; nesting is the one form runr accepts.
			return set.unknown(k, name, nestedHint(name))
		case isKey:
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue // `key:` with nothing keeps the default
			}
			if keyIndex[name].kind == kindFallback {
				if err := set.checkFallback(v, name); err != nil {
					return err
				}
			}
			var value any
			if err := v.Decode(&value); err != nil {
				return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s:%d: %s: %v", set.shown, v.Line, name, err)
			}
			set.values[name] = normalize(value)
		case sections[name]:
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue
			}
			if v.Kind != yaml.MappingNode {
				return stopreasons.Errorf(stopreasons.ConfigInvalid,
					"%s:%d: %s must be a mapping of keys (%s)", set.shown, v.Line, name, strings.Join(children(name), ", "))
			}
			if err := set.walk(v, name); err != nil {
				return err
			}
		default:
			return set.unknown(k, name, "")
		}
	}
	return nil
}

// checkFallback refuses, with its line, an entry of agent.fallback that is
// not a mapping or holds a key an entry does not take: the values are
// checked later with the other keys, where lines are no longer known.
func (set *fileSettings) checkFallback(v *yaml.Node, name string) error {
	if v.Kind != yaml.SequenceNode {
		return stopreasons.Errorf(stopreasons.ConfigInvalid,
			"%s:%d: %s must be a list of agents (write e.g. [{kind: codex, model: gpt-5-codex}])", set.shown, v.Line, name)
	}
	for i, e := range v.Content {
		entry := fmt.Sprintf("%s[%d]", name, i)
		if e.Kind != yaml.MappingNode {
			return stopreasons.Errorf(stopreasons.ConfigInvalid,
				"%s:%d: %s must be a mapping with kind and model (write e.g. {kind: codex, model: gpt-5-codex})", set.shown, e.Line, entry)
		}
		for j := 0; j+1 < len(e.Content); j += 2 {
			k := e.Content[j]
			if !slices.Contains(FallbackFields, k.Value) {
				hint := "an entry takes " + strings.Join(FallbackFields, ", ")
				if near := Closest(k.Value, FallbackFields, 1); len(near) > 0 {
					hint = "did you mean " + near[0] + "?"
				}
				return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s:%d: unknown key %s.%s (%s)", set.shown, k.Line, entry, k.Value, hint)
			}
		}
	}
	return nil
}

func (set *fileSettings) unknown(k *yaml.Node, name, hint string) error {
	if hint == "" {
		if s := suggest(name); s != "" {
			hint = "did you mean " + s + "?"
		} else {
			hint = "see docs/configuration.md for the keys runr knows"
		}
	}
	return stopreasons.Errorf(stopreasons.ConfigInvalid, "%s:%d: unknown key %s (%s)", set.shown, k.Line, name, hint)
}

// nestedHint explains how to write a dotted key that names a known key.
func nestedHint(name string) string {
	if _, ok := keyIndex[name]; ok || sections[name] {
		return "write it nested, one level per part of " + name
	}
	if s := suggest(name); s != "" {
		return "did you mean " + s + ", written nested?"
	}
	return "see docs/configuration.md for the keys runr knows"
}

// children lists the names directly under a section.
func children(section string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range keyDefs {
		rest, ok := strings.CutPrefix(d.name, section+".")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rest, ".")
		if !seen[first] {
			seen[first] = true
			out = append(out, first)
		}
	}
	return out
}

// normalize turns decoded data into JSON-friendly plain data: maps with
// string keys, JSON numbers as int or float64 like YAML gives them.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	}
	return v
}
