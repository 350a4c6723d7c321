package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/runr-dev/runr/tests/testenv"
)

// The part of .goreleaser.yaml this test reads (GoReleaser v2 schema).
type releaseConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		IDs     []string `yaml:"ids"`
		Formats []string `yaml:"formats"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
	} `yaml:"checksum"`
}

var ldflagX = regexp.MustCompile(`-X (main\.\w+)=`)

// xVars lists the package variables that the -X flags in s set.
func xVars(s string) []string {
	var vars []string
	for _, m := range ldflagX.FindAllStringSubmatch(s, -1) {
		vars = append(vars, m[1])
	}
	slices.Sort(vars)
	return vars
}

// The release builds runr for linux and darwin on amd64 and arm64, static,
// with the -X flags `make build` passes (what `runr version` prints), in
// archives with a checksum file. `make release-check` has GoReleaser itself
// validate the file; this test runs without it.
func TestReleaseConfigSetsVersionLdflagsForEachTarget(t *testing.T) {
	root, err := testenv.ModuleRoot()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	require.NoError(t, err)
	var cfg releaseConfig
	require.NoError(t, yaml.Unmarshal(b, &cfg))

	assert.Equal(t, 2, cfg.Version, "GoReleaser v2 schema")
	require.Len(t, cfg.Builds, 1)
	build := cfg.Builds[0]
	assert.Equal(t, "./cmd/runr", build.Main)
	assert.Equal(t, "runr", build.Binary)
	assert.Contains(t, build.Env, "CGO_ENABLED=0")
	assert.ElementsMatch(t, []string{"linux", "darwin"}, build.Goos)
	assert.ElementsMatch(t, []string{"amd64", "arm64"}, build.Goarch)

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	line := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=.*$`).Find(makefile)
	require.NotNil(t, line, "Makefile has no LDFLAGS line")
	want := xVars(string(line))
	assert.Equal(t, []string{"main.commit", "main.date", "main.version"}, want)
	var got []string
	for _, f := range build.Ldflags {
		got = append(got, xVars(f)...)
	}
	slices.Sort(got)
	assert.Equal(t, want, got, "the release sets what the Makefile sets")

	require.Len(t, cfg.Archives, 1)
	assert.Equal(t, []string{build.ID}, cfg.Archives[0].IDs)
	assert.Equal(t, []string{"tar.gz"}, cfg.Archives[0].Formats)
	assert.NotEmpty(t, cfg.Checksum.NameTemplate)
}
