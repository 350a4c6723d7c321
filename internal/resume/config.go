package resume

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runr-dev/runr/internal/config"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// RecordedConfig reads config.json, the resolved settings a run started
// with; nil when the run has none.
func RecordedConfig(runDir string) (map[string]any, error) {
	path := filepath.Join(runDir, "config.json")
	data, err := state.ReadRecord(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err, "cannot read the run's recorded config %s", path)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err, "the run's recorded config %s is not valid JSON (left untouched)", path)
	}
	return raw, nil
}

// LoadConfig resolves the settings of a resumed run. A run keeps the
// settings it started with (recorded, from config.json), including those
// its flags set (started: their keys), which a resume does not repeat and
// which runr.yaml and RUNR_* cannot override. Of the other keys, those
// that runr.yaml and RUNR_* now set explicitly (an empty list included)
// take their current value; a key they no longer set keeps its recorded
// value rather than fall back to a default the run did not start with.
// budget.* and resume.* always come from the current settings: a resume
// grants budget through its own flags, and the retry policy may change.
//
// changed lists the keys whose current value differs from the recorded
// one: a config changed since the run started. A run recorded before its
// flags' keys were (started nil) counts every key runr.yaml and RUNR_* set.
func LoadConfig(recorded map[string]any, started []string, opts config.LoadOptions) (cfg *config.Config, changed []string, err error) {
	opts.Overrides = nil
	cur, err := config.Load(opts)
	if err != nil {
		return nil, nil, err
	}
	if recorded == nil {
		return cur, nil, nil
	}
	var overrides []config.Override
	for _, key := range config.Keys() {
		rv, recordedHas := lookup(recorded, key)
		policy := strings.HasPrefix(key, "budget.") || strings.HasPrefix(key, "resume.")
		switch {
		case policy || !recordedHas:
			continue // the current value stands
		case !slices.Contains(started, key) && slices.Contains(cur.Explicit, key):
			if cv, _ := lookup(cur.Raw, key); !same(cv, rv) {
				changed = append(changed, key)
			}
			continue
		}
		overrides = append(overrides, config.Override{Key: key, Value: rv, Source: "config.json " + key})
	}
	opts.Overrides = overrides
	cfg, err = config.Load(opts)
	if err != nil {
		return nil, nil, err
	}
	return cfg, changed, nil
}

// lookup finds a dotted key in nested settings.
func lookup(m map[string]any, key string) (any, bool) {
	var cur any = m
	for _, part := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// same compares two settings by their JSON form, so that an int read from
// YAML equals the float64 read back from config.json, and an empty list
// equals a missing one.
func same(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	empty := func(j []byte) bool { s := string(j); return s == "null" || s == "[]" }
	return string(ja) == string(jb) || empty(ja) && empty(jb)
}
