package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeExec(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), mode))
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin1, bin2 := filepath.Join(dir, "bin1"), filepath.Join(dir, "bin2")
	writeExec(t, filepath.Join(bin1, "tool"), "echo 1\n", 0o755)
	writeExec(t, filepath.Join(bin2, "tool"), "echo 2\n", 0o755)
	writeExec(t, filepath.Join(bin2, "only2"), "echo 2\n", 0o755)
	writeExec(t, filepath.Join(dir, "repo", "check.sh"), "exit 0\n", 0o755)
	writeExec(t, filepath.Join(dir, "repo", "plain.sh"), "exit 0\n", 0o644)
	writeExec(t, filepath.Join(dir, "repo", "rel", "tool"), "exit 0\n", 0o755)
	repo := filepath.Join(dir, "repo")

	found := []struct {
		name, dir string
		env       []string
		want      string
	}{
		{"tool", "", []string{"PATH=" + bin1 + ":" + bin2}, filepath.Join(bin1, "tool")},
		{"tool", "", []string{"PATH=" + bin1, "PATH=" + bin2}, filepath.Join(bin2, "tool")}, // the last PATH wins
		{"only2", "", []string{"PATH=" + bin1 + ":" + bin2}, filepath.Join(bin2, "only2")},
		{"./check.sh", repo, nil, filepath.Join(repo, "check.sh")},
		{filepath.Join(repo, "check.sh"), "/", nil, filepath.Join(repo, "check.sh")},
	}
	for _, f := range found {
		got, err := LookPath(f.name, f.dir, f.env)
		require.NoError(t, err, "%s in %s", f.name, f.dir)
		assert.Equal(t, f.want, got)
	}

	notFound := []struct {
		name, dir string
		env       []string
		reason    string
	}{
		{"tool", "", []string{"PATH=" + bin1, "PATH=/nonexistent"}, "not found on PATH"},
		// A relative PATH entry is never searched, even from the directory
		// it would name.
		{"tool", repo, []string{"PATH=rel:.:"}, "not found on PATH"},
		{"./missing.sh", repo, nil, "no such file"},
		{"./check.sh/x", repo, nil, "no such file"},
		{"./plain.sh", repo, nil, "not an executable file"},
		{"./rel", repo, nil, "not an executable file"},
		// A name with a slash is taken from dir, not from runr's directory.
		{"./check.sh", bin1, nil, "no such file"},
	}
	for _, f := range notFound {
		_, err := LookPath(f.name, f.dir, f.env)
		require.Error(t, err, "%s in %s", f.name, f.dir)
		assert.ErrorIs(t, err, ErrNotFound)
		var nf *NotFoundError
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, f.reason, nf.Reason, f.name)
		assert.Equal(t, f.name+": "+f.reason+"; install it or give its full path", err.Error())
	}

	t.Run("nil env is runr's own PATH", func(t *testing.T) {
		t.Setenv("PATH", bin2)
		got, err := LookPath("only2", "", nil)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(bin2, "only2"), got)
	})
}

// TestRunAgreesWithLookPath: what LookPath finds is what Run starts, and
// what it refuses Run refuses with the same words.
func TestRunAgreesWithLookPath(t *testing.T) {
	dir := t.TempDir()
	bin1, bin2 := filepath.Join(dir, "bin1"), filepath.Join(dir, "bin2")
	writeExec(t, filepath.Join(bin1, "tool"), "echo one\n", 0o755)
	writeExec(t, filepath.Join(bin2, "tool"), "echo two\n", 0o755)
	repo := filepath.Join(dir, "repo")
	writeExec(t, filepath.Join(repo, "check.sh"), "pwd\n", 0o755)
	env := []string{"PATH=" + bin1, "PATH=" + bin2 + ":/usr/bin:/bin"}

	res, err := Run(context.Background(), Spec{Argv: []string{"tool"}, Env: env})
	require.NoError(t, err)
	assert.Equal(t, "two\n", string(res.Tail))

	res, err = Run(context.Background(), Spec{Argv: []string{"./check.sh"}, Dir: repo})
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(repo)
	require.NoError(t, err)
	assert.Equal(t, want+"\n", string(res.Tail))

	_, lookErr := LookPath("./check.sh", bin1, nil)
	_, runErr := Run(context.Background(), Spec{Argv: []string{"./check.sh"}, Dir: bin1})
	require.Error(t, runErr)
	assert.ErrorIs(t, runErr, ErrNotFound)
	assert.Equal(t, "run "+lookErr.Error(), runErr.Error())
}

func TestRunSeparateStdout(t *testing.T) {
	var stdout bytes.Buffer
	big := strings.Repeat("x", 200<<10)
	res, _, err := run(t, context.Background(), `head -c 204800 /dev/zero | tr '\0' x; echo; echo oops >&2; exit 3`, func(s *Spec) {
		s.Stdout = &stdout
		s.TailBytes = 1024
		s.OnStdoutLine = func([]byte) bool { t.Error("OnStdoutLine called although Stdout is set"); return true }
	})
	require.NoError(t, err)
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, big+"\n", stdout.String(), "stdout is whole, however long")
	assert.Equal(t, "oops\n", string(res.Tail), "the tail holds stderr only")
	assert.Equal(t, int64(len(big)+1+5), res.Bytes)
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()

	writeExec(t, filepath.Join(dir, "good"), "echo; echo '  tool 1.2.3  '; echo more\n", 0o755)
	line, err := Probe(ctx, Spec{Argv: []string{filepath.Join(dir, "good"), "--version"}})
	require.NoError(t, err)
	assert.Equal(t, "tool 1.2.3", line)

	writeExec(t, filepath.Join(dir, "stderr"), "echo 'tool 4.5' >&2\n", 0o755)
	line, err = Probe(ctx, Spec{Argv: []string{filepath.Join(dir, "stderr")}})
	require.NoError(t, err)
	assert.Equal(t, "tool 4.5", line, "stderr when stdout says nothing")

	writeExec(t, filepath.Join(dir, "broken"), "echo 'broken install' >&2; exit 3\n", 0o755)
	_, err = Probe(ctx, Spec{Argv: []string{filepath.Join(dir, "broken")}})
	require.Error(t, err)
	assert.Equal(t, "exit status 3: broken install", err.Error())

	_, err = Probe(ctx, Spec{Argv: []string{filepath.Join(dir, "missing")}})
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestProbeHangs: a program that never answers and ignores SIGTERM, and one
// that answers but leaves a child holding its stdout, both end within the
// probe's timeout plus its kill grace (plus a margin for a loaded machine).
func TestProbeHangs(t *testing.T) {
	dir := t.TempDir()
	writeExec(t, filepath.Join(dir, "hang"), "trap '' TERM\nwhile :; do sleep 1; done\n", 0o755)
	writeExec(t, filepath.Join(dir, "holder"), "sleep 60 &\necho 'holder 1.0'\n", 0o755)
	const timeout, grace, margin = 500 * time.Millisecond, 500 * time.Millisecond, 3 * time.Second

	start := time.Now()
	_, err := Probe(context.Background(), Spec{Argv: []string{filepath.Join(dir, "hang")}, Timeout: timeout, KillGrace: grace})
	took := time.Since(start)
	require.Error(t, err)
	assert.Equal(t, "timed out after 500ms", err.Error())
	assert.Less(t, took, timeout+grace+margin)

	start = time.Now()
	line, err := Probe(context.Background(), Spec{Argv: []string{filepath.Join(dir, "holder")}, Timeout: timeout, KillGrace: grace})
	took = time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, "holder 1.0", line)
	assert.Less(t, took, grace+margin, "the child holding stdout is stopped with the group")
}

// TestRunKeepsOutputOrder: with nobody reading stdout apart, the tail and
// the log hold stdout and stderr in the order the process wrote them.
func TestRunKeepsOutputOrder(t *testing.T) {
	dir := t.TempDir()
	want := ""
	for i := range 20 {
		want += "out " + string(rune('a'+i)) + "\nerr " + string(rune('a'+i)) + "\n"
	}
	for round := range 10 {
		logPath := filepath.Join(dir, fmt.Sprintf("round-%d.log", round))
		res, _, err := run(t, context.Background(), `for c in a b c d e f g h i j k l m n o p q r s t; do echo "out $c"; echo "err $c" >&2; done`, func(s *Spec) {
			s.LogPath = logPath
		})
		require.NoError(t, err)
		assert.Equal(t, want, string(res.Tail))
		log, err := os.ReadFile(logPath)
		require.NoError(t, err)
		assert.Equal(t, want, string(log))
	}
}
