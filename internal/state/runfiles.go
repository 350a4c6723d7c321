package state

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// WriteJSON writes v, indented, to the file name of run id, atomically
// (config.json, stop.json).
func (s *Store) WriteJSON(id, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return stopreasons.Wrap(stopreasons.InternalError, err, "encode %s of run %s", name, id)
	}
	return s.WriteRunFile(id, name, append(data, '\n'))
}

// WriteRunFile replaces the file name of run id's directory atomically; a
// symlink in its place is refused, never written through.
func (s *Store) WriteRunFile(id, name string, data []byte) error {
	path, err := s.runFile(id, name)
	if err != nil {
		return err
	}
	if err := WriteAtomic(path, data); err != nil {
		return wrapIO(err, "write %s", path)
	}
	return nil
}

// ReadRunFile reads the file name of run id's directory without following
// a symlink; an error wrapping fs.ErrNotExist when there is none.
func (s *Store) ReadRunFile(id, name string) ([]byte, error) {
	path, err := s.runFile(id, name)
	if err != nil {
		return nil, err
	}
	data, err := readFileNoFollow(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, wrapIO(err, "read %s", path)
	}
	return data, err
}

func (s *Store) runFile(id, name string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return "", stopreasons.Errorf(stopreasons.InternalError, "%q is not a file name inside a run directory", name)
	}
	return filepath.Join(s.RunDir(id), name), nil
}
