// Package task reads the task of a run (a file, or the --prompt text): its
// unchecked checklist items are the run's milestones, its `##` sections
// their groups in a parallel run; and it writes the prompt of each agent
// call from it. It knows nothing of the run's state: the supervisor hands
// it what a prompt needs (Call).
package task

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// MaxBytes is the largest task runr accepts. The task is held in memory,
// written into state.json and into every prompt: a bound keeps a wrong
// --task (a log, a device) from eating memory and disk.
const MaxBytes = 16 << 20

// Read reads the task file at path, named shown in messages. Only a
// regular file is read, and at most MaxBytes of it, so that /dev/zero or
// a FIFO nobody writes to cannot hang runr or fill its memory; the text is
// then checked like --prompt text. Every refusal is usage_error.
func Read(path, shown string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", stopreasons.Errorf(stopreasons.UsageError, "task file %s cannot be read: %v (give an existing file with --task)", shown, pathErr(err))
	}
	if !info.Mode().IsRegular() {
		return "", stopreasons.Errorf(stopreasons.UsageError, "task file %s is not a regular file (%s): give a text file with --task, or the text with --prompt", shown, fileKind(info.Mode()))
	}
	if info.Size() > MaxBytes {
		return "", tooLarge(shown)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", stopreasons.Errorf(stopreasons.UsageError, "task file %s cannot be read: %v (give an existing file with --task)", shown, pathErr(err))
	}
	defer f.Close()
	// The file may grow after the stat: the limit holds for what is read.
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return "", stopreasons.Errorf(stopreasons.UsageError, "task file %s cannot be read: %v", shown, pathErr(err))
	}
	if len(b) > MaxBytes {
		return "", tooLarge(shown)
	}
	if err := checkText(b, "task file "+shown); err != nil {
		return "", err
	}
	return string(b), nil
}

// CheckText checks task text given directly (source names it, e.g.
// "--prompt") as Read checks a file's: not empty, within MaxBytes,
// UTF-8 text without NUL bytes.
func CheckText(text, source string) error {
	if len(text) > MaxBytes {
		return stopreasons.Errorf(stopreasons.UsageError, "%s is %d bytes, more than the limit of %s: shorten the task", source, len(text), sizeText(MaxBytes))
	}
	return checkText([]byte(text), source)
}

// FirstPrompt is the prompt of a new run's first agent call, for checks
// that need its size before the run starts.
func FirstPrompt(task, promise string) string {
	goals := Goals(task)
	return Prompt(Call{Task: task, Milestones: len(goals), Goal: goals[0], Promise: promise})
}

// checkText refuses what cannot be a task: nothing but blanks, a NUL byte
// (a binary file; it would also cut the prompt short in an argv), or bytes
// that are not UTF-8 (the prompt and state.json are UTF-8 text).
func checkText(b []byte, what string) error {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return stopreasons.Errorf(stopreasons.UsageError, "%s has a NUL byte at byte offset %d: a task is text; give a text file, not a binary one", what, i)
	}
	if !utf8.Valid(b) {
		return stopreasons.Errorf(stopreasons.UsageError, "%s is not valid UTF-8 at byte offset %d: save the task as UTF-8 text (e.g. iconv -t UTF-8)", what, invalidUTF8At(b))
	}
	if strings.TrimSpace(string(b)) == "" {
		return stopreasons.Errorf(stopreasons.UsageError, "%s is empty: write the task into it", what)
	}
	return nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func tooLarge(shown string) error {
	return stopreasons.Errorf(stopreasons.UsageError, "task file %s is larger than the limit of %s: give a shorter task (point the agent to big inputs instead of pasting them)", shown, sizeText(MaxBytes))
}

func sizeText(n int) string { return fmt.Sprintf("%d MiB", n>>20) }

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}

func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
