package proc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// NotFoundError says why a program cannot be run. It wraps ErrNotFound.
type NotFoundError struct {
	Name   string // the program as it was given
	Reason string // "not found on PATH", "no such file", "not an executable file", ...
}

func (e *NotFoundError) Error() string {
	return e.Name + ": " + e.Reason + "; install it or give its full path"
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// LookPath finds the program name the way Run starts it, so that a check
// before a run and the run itself agree. A name with a slash is taken
// relative to dir (runr's own directory when dir is "") and must be an
// executable regular file; a bare name is searched in the PATH of env (the
// last PATH= entry wins, as in the child; nil env means runr's own
// environment). Like os/exec, relative PATH entries (the current directory
// included) are never searched, so that a program is not picked up by
// accident from wherever runr happens to run. The path returned is absolute
// for a name with a slash, whatever dir is.
func LookPath(name, dir string, env []string) (string, error) {
	if name == "" {
		return "", &NotFoundError{Name: `""`, Reason: "the program name is empty"}
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		// The child starts in dir: a relative path would be taken from there
		// a second time.
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", &NotFoundError{Name: name, Reason: err.Error()}
		}
		if reason := notExecutable(abs); reason != "" {
			return "", &NotFoundError{Name: name, Reason: reason}
		}
		return abs, nil
	}
	for _, d := range filepath.SplitList(pathOf(env)) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if notExecutable(p) == "" {
			return p, nil
		}
	}
	return "", &NotFoundError{Name: name, Reason: "not found on PATH"}
}

// pathOf is the PATH a process with environment env gets.
func pathOf(env []string) string {
	if env == nil {
		return os.Getenv("PATH")
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}

// notExecutable says why path cannot be started, or "" when it can be.
func notExecutable(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return "no such file"
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err.Error()
		}
		return err.Error()
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return "not an executable file"
	}
	return ""
}

// execMagics are the first bytes of the files the kernel runs: a script
// with its interpreter line, ELF, and Mach-O (thin, 32 and 64 bits, either
// byte order, and universal).
var execMagics = [][]byte{
	[]byte("#!"), []byte("\x7fELF"),
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
}

// unknownFormat says why the kernel would refuse to run path (ENOEXEC), or
// "". A process started behind the gate is exec'd by a shell, which would
// instead run such a file as a shell script; this keeps Run's answer the
// same with the gate and without.
func unknownFormat(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := f.Read(head)
	for _, m := range execMagics {
		if n >= len(m) && string(head[:len(m)]) == string(m) {
			return ""
		}
	}
	return "not an executable format (no #! line, not a binary)"
}
