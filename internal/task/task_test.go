package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestReadTask(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"text", write("ok.md", "# Task\n- [ ] one\n"), ""},
		{"empty", write("empty.md", " \n\t\n"), "is empty"},
		{"NUL", write("nul.md", "ab\x00"), "NUL byte at byte offset 2"},
		{"not UTF-8", write("latin1.md", "caf\xe9"), "not valid UTF-8 at byte offset 3"},
		{"too large", write("big.md", strings.Repeat("x", MaxBytes+1)), "larger than the limit of 16 MiB"},
		{"at the limit", write("limit.md", strings.Repeat("x", MaxBytes)), ""},
		{"directory", dir, "not a regular file (a directory)"},
		{"device", "/dev/zero", "not a regular file (a device)"},
		{"missing", filepath.Join(dir, "missing.md"), "cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := Read(tc.path, "T.md")
			if tc.want == "" {
				require.NoError(t, err)
				assert.NotEmpty(t, text)
				return
			}
			require.Error(t, err)
			assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
			assert.Contains(t, err.Error(), "task file T.md")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.ErrorContains(t, CheckText("ok\xff", "--prompt"), "--prompt is not valid UTF-8 at byte offset 2")
	assert.NoError(t, CheckText("fine", "--prompt"))
}
