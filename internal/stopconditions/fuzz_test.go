package stopconditions

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// FuzzDecode feeds YAML text through yaml.v3 into DecodeList, as the config
// does: decoding never panics, and every rejection is a config_invalid
// *stopreasons.Error whose message starts with the path under "stop.".
func FuzzDecode(f *testing.F) {
	seeds := []string{
		// valid
		`[{type: max_iterations, count: 10}]`,
		`[{type: max_duration, duration: 10m}, {type: max_duration, duration: 5}]`,
		`[{type: all_tests_pass}, {type: specific_tests_pass, tests: ["go test ./..."]}]`,
		`[{type: file_created, path: out/x}, {type: file_contains, path: NOTES.md, content: DONE}]`,
		`[{type: output_pattern, pattern: 'DONE \d+', regex: true}, {type: on_error}, {type: on_error, pattern: panic}]`,
		`[{type: custom_script, script: ./check.sh, args: [-v, 3], timeout: 10s}]`,
		`[{type: all, conditions: [{type: any, conditions: [{type: never}, {type: user_signal}]}, {type: not, condition: {type: test_failure_streak, count: 2}}]}]`,
		`- type: no_progress
  iterations: 3
`,
		``,
		// invalid
		`{type: never}`,
		`[never]`,
		`[{type: bogus}]`,
		`[{type: max_iterations, count: 0}]`,
		`[{type: max_iterations, count: 1e400}]`,
		`[{type: max_duration, duration: -1h}]`,
		`[{type: max_duration, duration: .inf}]`,
		`[{type: output_pattern, pattern: "(", regex: true}]`,
		`[{type: file_created, path: ../../etc/passwd}]`,
		`[{type: file_created, path: /abs}]`,
		`[{type: all, conditions: []}]`,
		`[{type: not, condition: null}]`,
		`[{1: 2}]`,
		`[{type: never, extra: 1}]`,
		`[{type: custom_script, script: x, args: [[1]]}]`,
		`&a [*a]`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var raw any
		if err := yaml.Unmarshal([]byte(text), &raw); err != nil {
			return // not YAML: the config reader reports that, not DecodeList
		}
		conds, err := DecodeList("stop.success", raw)
		if err == nil {
			for _, c := range conds {
				if c == nil || c.Type() == "" {
					t.Fatalf("decoded a condition without a type from %q", text)
				}
			}
			return
		}
		var se *stopreasons.Error
		if !errors.As(err, &se) || se.Code != stopreasons.ConfigInvalid {
			t.Fatalf("error %v (%T) is not config_invalid", err, err)
		}
		if !strings.HasPrefix(err.Error(), "stop.success") {
			t.Fatalf("error %q does not start with its path", err)
		}
	})
}
