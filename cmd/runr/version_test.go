package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func vcsInfo(modVersion, rev, when, modified string) *debug.BuildInfo {
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/runr-dev/runr", Version: modVersion}}
	for _, kv := range [][2]string{{"vcs", "git"}, {"vcs.revision", rev}, {"vcs.time", when}, {"vcs.modified", modified}} {
		if kv[1] != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[0], Value: kv[1]})
		}
	}
	return bi
}

func TestResolveBuild(t *testing.T) {
	const rev = "1073f1086668ecef9508060a9bbf3029593fe514"
	tests := []struct {
		name                    string
		ldVersion, ldCommit, ld string
		bi                      *debug.BuildInfo
		want                    BuildInfo
	}{
		{"linker flags win over the build info", "v1.2.3", "abc123", "2026-01-02T03:04:05Z",
			vcsInfo("v0.9.0", rev, "2025-01-01T00:00:00Z", "true"),
			BuildInfo{Version: "v1.2.3", Commit: "abc123", Date: "2026-01-02T03:04:05Z"}},
		{"go install of a tagged module", "", "", "",
			vcsInfo("v1.4.0", "", "", ""),
			BuildInfo{Version: "v1.4.0", Commit: unknown, Date: unknown}},
		{"go build in a clean checkout", "", "", "",
			vcsInfo("v0.0.0-20261124212459-1073f1086668", rev, "2026-11-24T21:24:59Z", "false"),
			BuildInfo{Version: "v0.0.0-20261124212459-1073f1086668", Commit: rev, Date: "2026-11-24T21:24:59Z"}},
		{"go build in a dirty checkout", "", "", "",
			vcsInfo("(devel)", rev, "2026-11-24T21:24:59Z", "true"),
			BuildInfo{Version: "dev", Commit: rev + "-dirty", Date: "2026-11-24T21:24:59Z"}},
		{"only the version from the linker", "v2.0.0", "", "",
			vcsInfo("(devel)", rev, "2026-11-24T21:24:59Z", "false"),
			BuildInfo{Version: "v2.0.0", Commit: rev, Date: "2026-11-24T21:24:59Z"}},
		{"no VCS information", "", "", "",
			vcsInfo("(devel)", "", "", ""),
			BuildInfo{Version: "dev", Commit: unknown, Date: unknown}},
		{"no build info at all", "", "", "", nil,
			BuildInfo{Version: "dev", Commit: unknown, Date: unknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, resolveBuild(tt.ldVersion, tt.ldCommit, tt.ld, tt.bi))
		})
	}
}

// setLinkerVars sets the package variables as -X would and restores them.
func setLinkerVars(t *testing.T, v, c, d string) {
	oldV, oldC, oldD := version, commit, date
	version, commit, date = v, c, d
	t.Cleanup(func() { version, commit, date = oldV, oldC, oldD })
}

func TestVersionCommandWithLinkerValues(t *testing.T) {
	setLinkerVars(t, "v1.2.3", "0123456789abcdef0123456789abcdef01234567", "2026-01-02T03:04:05Z")
	for _, args := range [][]string{{"version"}, {"--version"}} {
		io, out, errb := testStreams()
		require.Equal(t, 0, Main(args, io), "%v: %s", args, errb)
		assert.Equal(t, "runr v1.2.3\n"+
			"commit: 0123456789abcdef0123456789abcdef01234567\n"+
			"built:  2026-01-02T03:04:05Z\n"+
			"go:     "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+"\n", out.String(), "%v", args)
	}

	io, out, errb := testStreams()
	require.Equal(t, 0, Main([]string{"version", "--json"}, io), errb.String())
	var got map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, map[string]string{
		"version": "v1.2.3", "commit": "0123456789abcdef0123456789abcdef01234567", "date": "2026-01-02T03:04:05Z",
		"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH,
	}, got)
}

// Without linker values the command shows what the test binary's own build
// info holds, computed here independently of resolveBuild's defaults.
func TestVersionCommandWithoutLinkerValues(t *testing.T) {
	setLinkerVars(t, "", "", "")
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	wantCommit, wantDate := unknown, unknown
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			wantCommit = s.Value
		case "vcs.time":
			wantDate = s.Value
		}
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.modified" && s.Value == "true" && wantCommit != unknown {
			wantCommit += "-dirty"
		}
	}
	wantVersion := "dev"
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		wantVersion = v
	}

	io, out, errb := testStreams()
	require.Equal(t, 0, Main([]string{"version", "--json"}, io), errb.String())
	var got BuildInfo
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, BuildInfo{Version: wantVersion, Commit: wantCommit, Date: wantDate,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}, got)
}

func TestVersionRejectsArguments(t *testing.T) {
	io, _, errb := testStreams()
	assert.Equal(t, 64, Main([]string{"version", "extra"}, io))
	assert.Contains(t, errb.String(), "unknown command")
}
