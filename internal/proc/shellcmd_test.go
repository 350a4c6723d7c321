package proc

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFirstProgram(t *testing.T) {
	tests := map[string]string{
		"go test ./...":              "go",
		"  make   check":             "make",
		"CGO_ENABLED=0 go vet ./...": "go",
		"A=1 B=2 ./run.sh":           "./run.sh",
		`"./my tool" x`:              "./my tool",
		`FOO='a b' ./ci.sh`:          "./ci.sh",
		"cd web && npm test":         "cd",
		"":                           "",
		"--flag=x go":                "--flag=x",
	}
	for cmd, want := range tests {
		assert.Equal(t, want, FirstProgram(cmd), cmd)
	}
}

func TestCommandProgram(t *testing.T) {
	tests := map[string]string{
		"go test ./...":              "go",
		"  make   check":             "make",
		"CGO_ENABLED=0 go vet ./...": "go",
		`FOO='a b' ./ci.sh -v`:       "./ci.sh",
		"pytest>out.txt":             "",
		"nosuchtool && echo ok":      "nosuchtool",
		"cd web && npm test":         "",
		"done":                       "",
		`"./my tool" x`:              "",
		"$GO test":                   "",
		"./*.sh":                     "",
		"X=$(a b) prog":              "",
		"(cd x; make)":               "",
		"":                           "",
	}
	for cmd, want := range tests {
		assert.Equal(t, want, CommandProgram(cmd), cmd)
	}
}
