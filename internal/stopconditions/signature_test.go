package stopconditions

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSignatureStable(t *testing.T) {
	tests := []struct {
		name    string
		command string
		a, b    string
	}{
		{"go test timings and line numbers", "go test ./...",
			"--- FAIL: TestParse (0.03s)\n    parse_test.go:42: got 3, want 4\nFAIL\nFAIL\tgithub.com/x/y\t0.412s",
			"--- FAIL: TestParse (1.20s)\n    parse_test.go:57: got 8, want 9\nFAIL\nFAIL\tgithub.com/x/y\t2.001s"},
		{"temp paths", "make test",
			"open /tmp/go-build123456/b001/x.txt: no such file or directory",
			"open /tmp/TestFoo987/001/x.txt: no such file or directory"},
		{"macOS temp paths", "make test",
			"cannot write /var/folders/xy/abc123/T/run-1/out: permission denied",
			"cannot write /private/var/folders/qq/zz9/T/run-77/out: permission denied"},
		{"timestamps", "./check.sh",
			"2026-01-02T10:11:12.345Z ERROR database is locked",
			"2026-11-21 23:00:17+01:00 ERROR database is locked"},
		{"clock times", "./check.sh", "[10:11:12] build failed", "[9:01:59.123] build failed"},
		{"addresses and goroutines", "go test ./...",
			"panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x4a2b3c]\ngoroutine 7 [running]:",
			"panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4f00aa]\ngoroutine 19 [running]:"},
		{"hex ids", "git push",
			"error: object 3f9a1c2b7d is missing; uuid 123e4567-e89b-12d3-a456-426614174000",
			"error: object a0b1c2d3e4f5a6b7c8d9 is missing; uuid 00000000-aaaa-bbbb-cccc-0123456789ab"},
		{"durations", "npm test", "Timed out after 5000ms waiting for server (1m30s total)", "Timed out after 250ms waiting for server (2h0m1.5s total)"},
		{"colours and spacing", "npm test", "\x1b[31mFAIL\x1b[0m  src/a.test.ts", "FAIL src/a.test.ts  "},
		{"blank lines", "npm test", "\n\nerror: boom\n", "error: boom"},
		{"only the first lines count", "pytest",
			"E1\nE2\nE3\nE4\nE5\nE6\nE7\nE8\nthen a varying tail: one",
			"E1\nE2\nE3\nE4\nE5\nE6\nE7\nE8\nthen a varying tail: two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := Signature(tt.command, tt.a), Signature(tt.command, tt.b)
			assert.Equal(t, a, b)
			assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{12}$`), a)
		})
	}
}

func TestSignatureDiffers(t *testing.T) {
	tests := []struct {
		name       string
		cmdA, outA string
		cmdB, outB string
	}{
		{"different tests fail", "go test ./...", "--- FAIL: TestParse (0.03s)", "go test ./...", "--- FAIL: TestRender (0.03s)"},
		{"different messages", "make", "error: missing semicolon", "make", "error: undefined variable"},
		{"different commands, same output", "go test ./a", "FAIL", "go test ./b", "FAIL"},
		{"words made of hex letters are kept", "make", "error: file effaced", "make", "error: file defaced"},
		{"a different file", "go vet ./...", "parse.go:12: unreachable code", "go vet ./...", "render.go:12: unreachable code"},
		{"no output and some output", "./check.sh", "", "./check.sh", "exit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.NotEqual(t, Signature(tt.cmdA, tt.outA), Signature(tt.cmdB, tt.outB))
		})
	}
}

func TestSignatureIsDeterministic(t *testing.T) {
	out := "--- FAIL: TestX (0.01s)\n    x_test.go:9: boom"
	assert.Equal(t, Signature("go test ./...", out), Signature("go test ./...", out))
}
