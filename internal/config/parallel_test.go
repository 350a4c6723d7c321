package config

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParallelKeys(t *testing.T) {
	def, err := Load(LoadOptions{RepoRoot: repo(t, "")})
	require.NoError(t, err)
	assert.Equal(t, Parallel{Workers: 1, MaxRequeues: 2}, def.Parallel)

	cfg, err := Load(LoadOptions{RepoRoot: repo(t, "parallel:\n  workers: 3\n  max_requeues: 0\n"),
		Overrides: []Override{{Key: "parallel.workers", Value: 4, Source: "--parallel"}}})
	require.NoError(t, err)
	assert.Equal(t, Parallel{Workers: 4, MaxRequeues: 0}, cfg.Parallel)
	// Working in parallel changes the run: a resume compares it.
	assert.NotEqual(t, def.Hash(), cfg.Hash())

	for _, tc := range []struct {
		file      string
		overrides []Override
		want      string
	}{
		{file: "parallel:\n  workers: 0\n", want: "runr.yaml: parallel.workers: 0 is below 1 (1 works the milestones one at a time)"},
		{overrides: []Override{{Key: "parallel.workers", Value: "x", Source: "--parallel"}}, want: "--parallel x: not a whole number"},
		{file: "parallel:\n  max_requeues: -1\n", want: "runr.yaml: parallel.max_requeues: -1 is negative"},
	} {
		_, err := Load(LoadOptions{RepoRoot: repo(t, tc.file), Overrides: tc.overrides})
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// A number out of range is refused with advice, and the value the advice
// names is accepted when given in the same place: for every numeric key,
// from the environment, runr.yaml and a flag.
func TestOutOfRangeAdviceNamesAnAcceptedValue(t *testing.T) {
	advised := regexp.MustCompile(`\((?:use )?(\d+(?:\.\d+)?)\b`)
	for _, d := range keyDefs {
		switch d.kind {
		case kindCount, kindCount64, kindAmount, kindRate, kindWorkers:
		default:
			continue
		}
		for _, bad := range []string{"-1", "2.5e9", "7"} {
			load := func(value string) (string, error) {
				_, err := Load(LoadOptions{RepoRoot: repo(t, ""), Environ: []string{EnvName(d.name) + "=" + value}})
				if err == nil {
					return "", nil
				}
				return err.Error(), err
			}
			msg, err := load(bad)
			if err == nil {
				continue
			}
			m := advised.FindStringSubmatch(msg)
			if m == nil {
				continue
			}
			_, err = load(m[1])
			assert.NoError(t, err, "%s=%s: %q advises %s", EnvName(d.name), bad, msg, m[1])

			file := func(value string) error {
				yaml := ""
				for i, part := range strings.Split(d.name, ".") {
					yaml += "\n" + strings.Repeat("  ", i) + part + ":"
				}
				yaml += " " + value + "\n"
				_, err := Load(LoadOptions{RepoRoot: repo(t, yaml)})
				return err
			}
			require.Error(t, file(bad), "%s: %s in runr.yaml", d.name, bad)
			assert.NoError(t, file(m[1]), "%s: %s in runr.yaml, as %q advises", d.name, m[1], msg)
			flag := func(value string) error {
				_, err := Load(LoadOptions{RepoRoot: repo(t, ""), Overrides: []Override{{Key: d.name, Value: value, Source: "--flag"}}})
				return err
			}
			require.Error(t, flag(bad))
			assert.NoError(t, flag(m[1]), "%s: --flag %s, as advised", d.name, m[1])
		}
	}
}
