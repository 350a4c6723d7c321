package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/stopreasons"
)

// FuzzLoad feeds any text to the config reader as runr.yaml, with any value
// for one RUNR_* variable. Bad input is the user's to fix, so every refusal
// is config_invalid and names the file or the variable; never an
// internal_error, never a panic. What loads, loads the same again.
func FuzzLoad(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "..", "configs", "runr.example.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example), uint8(0), "")
	for _, s := range []struct {
		yaml string
		env  uint8
		val  string
	}{
		{"agent:\n  kind: command\n  command: [sh, -c, 'echo {prompt}']\nbudget:\n  time: 90m\n", 1, "2h"},
		{"stop:\n  success:\n    - type: all_tests_pass\n  failure:\n    - {type: max_iterations, count: 3}\n", 2, "abc"},
		{"verify:\n  commands: [go test ./...]\n  timeout: 10s\n", 3, "-1"},
		{"agent: {kind: claude, args: [--x], env: {A: b}}\n", 4, "1e400"},
		{"budget:\n  time: 5\n  max_cost_usd: .nan\n", 5, "true"},
		{"bogus: 1\n", 0, ""},
		{"agent:\n  kind: [a]\n", 0, ""},
		{"- a\n- b\n", 0, ""},
		{"a: &x [*x]\n", 0, ""},
		{"agent:\n  kind: command\n  command: []\n", 0, ""},
		{"budget:\n  max_ticks: 99999999999999999999\n", 0, ""},
		{"\t: :\n", 0, ""},
		{"", 6, "command"},
	} {
		f.Add(s.yaml, s.env, s.val)
	}
	keys := Keys()
	f.Fuzz(func(t *testing.T, text string, envKey uint8, envValue string) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		envName := EnvName(keys[int(envKey)%len(keys)])
		opts := LoadOptions{
			RepoRoot:   dir,
			Environ:    []string{envName + "=" + envValue},
			AgentKinds: agents.Kinds(),
		}
		cfg, err := Load(opts)
		if err != nil {
			var se *stopreasons.Error
			if !errors.As(err, &se) || se.Code != stopreasons.ConfigInvalid {
				t.Fatalf("refused with %v (%T), not config_invalid", err, err)
			}
			if msg := err.Error(); !strings.Contains(msg, FileName) && !strings.Contains(msg, envName) {
				t.Fatalf("the error names neither %s nor %s: %s", FileName, envName, msg)
			}
			return
		}
		again, err := Load(opts)
		if err != nil {
			t.Fatalf("loaded once, then refused: %v", err)
		}
		if cfg.Hash() != again.Hash() {
			t.Fatalf("the same input loads to two configs")
		}
	})
}
