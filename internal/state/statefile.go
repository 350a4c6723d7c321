package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// Save stamps UpdatedAt and the schema version, applies the bounds of
// state.json (Compact), and replaces state.json durably: a reader, a
// SIGKILL or a power loss leaves the old file or the new one, and once Save
// returns the new one stays. It is the write at the end of every tick.
func (s *Store) Save(st *State) error { return s.save(st) }

// SaveProcessStart is Save for the record of a process runr is starting
// (DESIGN §2: state.json names it while it runs), the same atomic, durable
// write (DESIGN §5).
func (s *Store) SaveProcessStart(st *State) error { return s.save(st) }

func (s *Store) save(st *State) error {
	if err := checkID(st.RunID); err != nil {
		return err
	}
	if err := s.storeTask(st); err != nil {
		return err
	}
	st.SchemaVersion = SchemaVersion
	st.UpdatedAt = time.Now().UTC()
	st.Compact()
	st.Scores = Scores(st)
	data, err := s.enc.encode(st)
	if err != nil {
		return stopreasons.Wrap(stopreasons.InternalError, err, "encode state of run %s", st.RunID)
	}
	path := s.StatePath(st.RunID)
	err = WriteAtomic(path, data)
	s.enc.release(st.RunID, data)
	if err != nil {
		return wrapIO(err, "save %s", path)
	}
	if st.RunStatus != stopreasons.RunRunning {
		s.enc.forget(st.RunID)
	}
	return nil
}

// storeTask writes the task text of a run whose state.json held it inline
// (written by an older runr) to task.md, before the first state.json
// without it: a kill in between leaves the old state.json, which still has
// it.
func (s *Store) storeTask(st *State) error {
	if st.Task.TextFile != "" || st.Task.Prompt == "" {
		return nil
	}
	if err := s.WriteRunFile(st.RunID, taskFile, []byte(st.Task.Prompt)); err != nil {
		return err
	}
	st.Task.setText(st.Task.Prompt)
	return nil
}

func (t *Task) setText(text string) {
	sum := sha256.Sum256([]byte(text))
	t.TextFile, t.Bytes, t.SHA256 = taskFile, len(text), hex.EncodeToString(sum[:])
}

// Load reads the state.json of run id, and the task text from its
// task.md.
func (s *Store) Load(id string) (*State, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := s.mustExist(id); err != nil {
		return nil, err
	}
	st, err := LoadFile(s.StatePath(id))
	if err != nil {
		return nil, err
	}
	if err := s.loadTask(st); err != nil {
		return nil, err
	}
	return st, nil
}

// loadTask reads the task text st names into st.Task.Prompt. A task.md
// that is missing, or is not the text state.json recorded, is
// state_corrupt: the run would go on with another task.
func (s *Store) loadTask(st *State) error {
	t := &st.Task
	if t.TextFile == "" {
		return nil
	}
	path := filepath.Join(s.RunDir(st.RunID), taskFile)
	if t.TextFile != taskFile {
		return stopreasons.Errorf(stopreasons.StateCorrupt,
			"%s: task.text_file %q is not %s (left untouched); inspect or remove the run", s.StatePath(st.RunID), t.TextFile, taskFile)
	}
	data, err := readFileNoFollow(path)
	if err != nil {
		if stopreasons.CodeOf(err) == stopreasons.StateCorrupt {
			return err
		}
		return stopreasons.Wrap(stopreasons.StateCorrupt, err,
			"cannot read the task text of run %s; restore %s (the task the run started with) or remove the run", st.RunID, path)
	}
	sum := sha256.Sum256(data)
	if len(data) != t.Bytes || hex.EncodeToString(sum[:]) != t.SHA256 {
		return stopreasons.Errorf(stopreasons.StateCorrupt,
			"%s is not the task run %s started with (%d bytes, sha256 %s recorded; %d bytes found); restore it or remove the run",
			path, st.RunID, t.Bytes, t.SHA256, len(data))
	}
	t.Prompt = string(data)
	return nil
}

// LoadFile reads a state.json. A file that cannot be read, is not valid
// JSON, lacks a run id or has a newer schema_version is state_corrupt; the
// file is left exactly as it is, for a person to inspect. Unknown fields are
// ignored. The task text of a file that keeps it in task.md is not read
// (Store.Load reads it).
func LoadFile(path string) (*State, error) {
	data, err := readFileNoFollow(path)
	if err != nil {
		if stopreasons.CodeOf(err) == stopreasons.StateCorrupt {
			return nil, err
		}
		return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err, "cannot read run state %s", path)
	}
	var head struct {
		SchemaVersion int `json:"schema_version"`
	}
	// Look at the version first: a newer file may not decode into State at all,
	// and "written by a newer runr" is the message that helps then.
	if json.Unmarshal(data, &head) == nil && head.SchemaVersion > SchemaVersion {
		return nil, newerSchema(path, head.SchemaVersion)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err,
			"run state %s is not valid JSON (left untouched); inspect or remove the run", path)
	}
	if st.RunID == "" {
		return nil, noRunID(path)
	}
	if problem := st.impossible(); problem != "" {
		return nil, stopreasons.Errorf(stopreasons.StateCorrupt,
			"%s: %s (left untouched); inspect or remove the run", path, problem)
	}
	st.Compact()
	return &st, nil
}

func newerSchema(path string, v int) error {
	return stopreasons.Errorf(stopreasons.StateCorrupt,
		"run state %s has schema_version %d, newer than the %d this runr reads; use a newer runr for this run",
		path, v, SchemaVersion)
}

func noRunID(path string) error {
	return stopreasons.Errorf(stopreasons.StateCorrupt,
		"run state %s has no run_id (left untouched); inspect or remove the run", path)
}
