// Package state is runr's run store: one directory per run holding
// state.json, the timeline, the lock, logs and reports (DESIGN §5).
//
// It promises that state.json is only ever replaced atomically, so a reader
// never sees a partial file even after a SIGKILL; that a file it cannot read
// is reported as state_corrupt and never modified; and that no run id from
// outside reaches a path outside the store.
package state

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// File and directory names inside the store.
const (
	runsDir       = "runs"
	activeDir     = "active"
	worktreesDir  = "worktrees"
	logsDir       = "logs"
	stateFile     = "state.json"
	configFile    = "config.json"
	timelineFile  = "timeline.jsonl"
	lockFile      = "lock"
	taskFile      = "task.md"
	stopFile      = "stop-request"
	tempPrefix    = ".tmp-"
	probePrefix   = tempPrefix + "probe-"
	creatingDir   = ".creating-"
	runIDTimeForm = "20060102T150405Z"
)

// Latest is the run reference that names the run created last.
const Latest = "latest"

// Store is a run store rooted at Home.
type Store struct {
	Home string
	enc  *encodeCache // what Save need not encode again; nil: encode all
}

// DefaultHome is the run store of a repository whose git common dir is
// commonDir (guard.CommonDir): <git common dir>/runr. The common dir is
// shared by all worktrees of a repository, so their runs are listed
// together, and it lies inside .git, where an agent's `git clean -fdx`
// cannot reach it.
func DefaultHome(commonDir string) string {
	return filepath.Join(filepath.Clean(commonDir), "runr")
}

// Open makes sure the store at home exists and is writable.
func Open(home string) (*Store, error) {
	abs, err := filepath.Abs(home)
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run store %s", home)
	}
	for _, d := range []string{runsDir, activeDir, worktreesDir} {
		p := filepath.Join(abs, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
				"cannot create run store directory %s; make it writable or choose another store with --home", p)
		}
	}
	// The directories may exist but be read-only; only a real write tells.
	// Named .tmp-probe-<random>-<pid>, so that status can tell a probe
	// left by a killed runr from one being made now.
	probe, err := os.CreateTemp(filepath.Join(abs, runsDir), probePrefix+"*-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
			"run store %s is not writable; fix its permissions or choose another store with --home", abs)
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run store %s: remove probe file", abs)
	}
	return &Store{Home: abs, enc: &encodeCache{}}, nil
}

// OpenRead opens the store at home for reading only (status, doctor of a
// run): it creates nothing and does not ask for write permission, so a
// read-only store, or one on a read-only mount, can still be inspected.
func OpenRead(home string) (*Store, error) {
	abs, err := filepath.Abs(home)
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run store %s", home)
	}
	return &Store{Home: abs, enc: &encodeCache{}}, nil
}

// NewRunID returns a fresh run id: the UTC time to the second and six random
// hex digits, so ids sort by creation time and two runs started in the same
// second still differ.
func NewRunID(now time.Time) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on the systems runr supports.
		panic("state: crypto/rand: " + err.Error())
	}
	return now.UTC().Format(runIDTimeForm) + "-" + hex.EncodeToString(b[:])
}

// ValidRunID reports whether id is a run id: the form NewRunID makes
// (20261121T230017Z-3f9a1c) or a name given with --run-id (ValidRunName).
// Anything else is refused, so no id can name a path outside the store.
func ValidRunID(id string) bool {
	return generatedID(id) || ValidRunName(id)
}

// generatedID reports whether id has exactly the form NewRunID makes.
func generatedID(id string) bool {
	if len(id) != len("20261121T230017Z-3f9a1c") {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		var ok bool
		switch {
		case i == 8:
			ok = c == 'T'
		case i == 15:
			ok = c == 'Z'
		case i == 16:
			ok = c == '-'
		case i < 15:
			ok = c >= '0' && c <= '9'
		default:
			ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		}
		if !ok {
			return false
		}
	}
	return true
}

// ValidRunName reports whether name may be given as a run id with
// `runr run --run-id`: [a-z0-9][a-z0-9._-]{0,62}, and not "latest".
func ValidRunName(name string) bool {
	if len(name) == 0 || len(name) > 63 || name == Latest {
		return false
	}
	// It names the branch runr/<id> of a --worktree run too: no ".." and
	// no ending git refuses in a branch name.
	if strings.Contains(name, "..") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i > 0 {
			ok = ok || c == '.' || c == '_' || c == '-'
		}
		if !ok {
			return false
		}
	}
	return true
}

// CheckRunName returns usage_error unless name may be given with --run-id.
func CheckRunName(name string) error {
	if ValidRunName(name) {
		return nil
	}
	if name == Latest {
		return stopreasons.Errorf(stopreasons.UsageError,
			"--run-id %s: %q names the run created last and cannot be a run id; choose another name", name, Latest)
	}
	return stopreasons.Errorf(stopreasons.UsageError,
		"--run-id %q: a run id is 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit, without '..' or a final '.' or '.lock' (it names the branch runr/<id> too; e.g. --run-id nightly-2026-11-21)", name)
}

func checkID(id string) error {
	if ValidRunID(id) {
		return nil
	}
	if id == "" {
		return stopreasons.Errorf(stopreasons.UsageError,
			"the run id is empty: give an id like 20261121T230017Z-3f9a1c, or %q; `runr status` lists the runs", Latest)
	}
	return stopreasons.Errorf(stopreasons.UsageError,
		"%q is not a run id: an id looks like 20261121T230017Z-3f9a1c or a --run-id name (a-z, 0-9, '.', '_', '-'), or use %q; `runr status` lists the runs", id, Latest)
}

// CheckRef returns usage_error unless ref is "latest" or has the form of a
// run id. An empty ref is an error too: an empty argument to `runr status`
// is a mistake, not a request for the list.
func CheckRef(ref string) error {
	if ref == Latest {
		return nil
	}
	return checkID(ref)
}

// Resolve turns a run reference (an id or "latest") into the id of an
// existing run.
func (s *Store) Resolve(ref string) (string, error) {
	if ref == Latest {
		ids, err := s.List()
		if err != nil {
			return "", err
		}
		if len(ids) == 0 {
			return "", stopreasons.Errorf(stopreasons.RunNotFound,
				"there are no runs in %s yet; start one with `runr run`", s.Home)
		}
		return ids[len(ids)-1], nil
	}
	if err := checkID(ref); err != nil {
		return "", err
	}
	if err := s.mustExist(ref); err != nil {
		return "", err
	}
	return ref, nil
}

// mustExist returns run_not_found unless the run directory of a valid id
// exists; a symlink in its place is state_corrupt.
func (s *Store) mustExist(id string) error {
	fi, err := os.Lstat(s.RunDir(id))
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return symlinkError(s.RunDir(id))
	case err == nil || errors.Is(err, fs.ErrNotExist):
		return stopreasons.Errorf(stopreasons.RunNotFound,
			"no run %s in %s; `runr status` lists the runs", id, s.Home)
	default:
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run %s", id)
	}
}

// List returns the ids of all runs, oldest first.
func (s *Store) List() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.Home, runsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "list runs in %s", s.Home)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && ValidRunID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	// Generated ids sort by their creation second, a --run-id name by
	// the created_at its state.json records (to the second); runs created
	// within the same second are ordered by their created_at, so that
	// "latest" is the run created last.
	second := make(map[string]string, len(ids))
	created := map[string]time.Time{}
	for _, id := range ids {
		if generatedID(id) {
			second[id] = idSecond(id)
		} else {
			created[id] = s.createdAt(id)
			second[id] = created[id].UTC().Format(runIDTimeForm)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(strings.Compare(second[a], second[b]), strings.Compare(a, b))
	})
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && second[ids[j]] == second[ids[i]] {
			j++
		}
		if j-i > 1 {
			same := ids[i:j]
			for _, id := range same {
				if _, ok := created[id]; !ok {
					created[id] = s.createdAt(id)
				}
			}
			slices.SortStableFunc(same, func(a, b string) int { return created[a].Compare(created[b]) })
		}
		i = j
	}
	return ids, nil
}

// idSecond is the time part of a generated run id.
func idSecond(id string) string {
	before, _, _ := strings.Cut(id, "-")
	return before
}

// createdAt reads a run's created_at; an unreadable state sorts first.
func (s *Store) createdAt(id string) time.Time {
	sum, err := s.Summary(id)
	if err != nil {
		return time.Time{}
	}
	return sum.CreatedAt
}

// RunDir is the directory of run id.
func (s *Store) RunDir(id string) string {
	return filepath.Join(s.Home, runsDir, id)
}

// LogPath is the log file of one phase of one tick, e.g.
// runs/<id>/logs/tick-0007-implement.log.
func (s *Store) LogPath(id string, tick int, phase string) string {
	return filepath.Join(s.RunDir(id), logsDir, fmt.Sprintf("tick-%04d-%s.log", tick, phase))
}

// StatePath is the state.json of run id.
func (s *Store) StatePath(id string) string {
	return filepath.Join(s.RunDir(id), stateFile)
}

// Create makes a new run with st as its first state.json (CreateRun
// without a config.json).
func (s *Store) Create(st *State) error { return s.CreateRun(st, nil) }

// CreateRun makes a new run (see CreateRunLocked) and leaves it unlocked.
func (s *Store) CreateRun(st *State, config any) error {
	l, err := s.create(st, config, false)
	release(l)
	return err
}

// CreateRunLocked is CreateRun returning the new run's lock, taken before
// the run appears in runs/: no other runr can see the run unheld and take
// it for a crashed one (a --run-id given to two runr at once).
func (s *Store) CreateRunLocked(st *State, config any) (*Lock, error) {
	return s.create(st, config, true)
}

func release(l *Lock) {
	if l != nil {
		l.Release()
	}
}

func existsError(id, dir string) error {
	return stopreasons.Errorf(stopreasons.RunLocked,
		"run %s already exists (%s): another runr created it; `runr status %s` shows it", id, dir, id)
}

// CreateRun makes the directory of a new run holding its first state.json
// and, unless config is nil, config.json (the settings the run starts
// with). The run appears whole or not at all: it is built under a hidden
// name in runs/ (.creating-<id>-<pid>, which List never shows), synced,
// then renamed into place, so a runr killed at any instant leaves either no
// run or a complete one; a leftover hidden directory is removed by Sweep.
// It refuses an id that already exists rather than overwrite a run
// (run_locked: another runr made it).
func (s *Store) create(st *State, config any, locked bool) (*Lock, error) {
	if err := checkID(st.RunID); err != nil {
		return nil, err
	}
	runs := filepath.Join(s.Home, runsDir)
	dir := s.RunDir(st.RunID)
	if _, err := os.Lstat(dir); err == nil {
		return nil, existsError(st.RunID, dir)
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = time.Now().UTC()
	}
	st.SchemaVersion = SchemaVersion
	st.UpdatedAt = time.Now().UTC()
	st.Compact()
	type file struct {
		name string
		v    any
		raw  []byte
	}
	var files []file
	if st.Task.Prompt != "" {
		files = append(files, file{name: taskFile, raw: []byte(st.Task.Prompt)})
		st.Task.setText(st.Task.Prompt)
	}
	files = append(files, file{name: stateFile, v: st})
	if config != nil {
		files = append(files, file{name: configFile, v: config})
	}
	tmp := filepath.Join(runs, fmt.Sprintf("%s%s-%d", creatingDir, st.RunID, os.Getpid()))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err,
			"create run directory in %s; make the run store writable or choose another with --home", s.Home)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Mkdir(filepath.Join(tmp, logsDir), 0o755); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create log directory of run %s", st.RunID)
	}
	var written []*os.File
	defer func() {
		for _, f := range written {
			f.Close()
		}
	}()
	for _, f := range files {
		data := f.raw
		if data == nil {
			b, err := json.MarshalIndent(f.v, "", "  ")
			if err != nil {
				return nil, stopreasons.Wrap(stopreasons.InternalError, err, "encode %s of run %s", f.name, st.RunID)
			}
			data = append(b, '\n')
		}
		w, err := writeNew(filepath.Join(tmp, f.name), data)
		if err != nil {
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
		}
		written = append(written, w)
	}
	// The files' writeback starts together: the syncs wait for one round
	// of writes, not one each.
	startWriteback(written)
	for _, f := range written {
		if err := f.Sync(); err != nil {
			return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
		}
	}
	if err := syncDir(tmp); err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
	}
	var lock *Lock
	if locked {
		var err error
		if lock, err = newLock(st.RunID, filepath.Join(tmp, lockFile)); err != nil {
			return nil, err
		}
	}
	if err := renameNoReplace(tmp, dir); err != nil {
		release(lock)
		if errors.Is(err, fs.ErrExist) {
			return nil, existsError(st.RunID, dir)
		}
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
	}
	done = true
	if lock != nil {
		lock.path = s.lockPath(st.RunID) // the same file, renamed with its directory
	}
	if err := syncDir(runs); err != nil {
		release(lock)
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "create run %s", st.RunID)
	}
	return lock, nil
}

// writeNew creates path, which must not exist, with data, and returns it
// open for the caller to sync and close.
func writeNew(path string, data []byte) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

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

// LeftoverTemps lists the temporary files that interrupted atomic writes
// left in run directories and in active/. They are harmless, never read, and
// safe to delete once no runr process writes to that run. The
// .tmp-state.json-spare that an older runr kept beside a running run's
// state.json is one of them: no runr writes to it now.
func (s *Store) LeftoverTemps() ([]string, error) {
	ids, err := s.List()
	if err != nil {
		return nil, err
	}
	dirs := []string{filepath.Join(s.Home, activeDir)}
	for _, id := range ids {
		dirs = append(dirs, s.RunDir(id))
	}
	var out []string
	for _, d := range dirs {
		m, err := filepath.Glob(filepath.Join(d, tempPrefix+"*"))
		if err != nil {
			return nil, stopreasons.Wrap(stopreasons.InternalError, err, "look for temporary files in %s", d)
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return out, nil
}

// DisplayStatus is the run status to show: st.RunStatus, except that a run
// whose state says running while no live process holds its lock is crashed.
func (s *Store) DisplayStatus(st *State) string { return s.LiveStatus(st.RunID, st.RunStatus) }

// wrapIO wraps an error of writing a store file: environment_invalid, unless
// it already carries a reason (a symlink in the file's place is
// state_corrupt).
func wrapIO(err error, format string, args ...any) error {
	var e *stopreasons.Error
	if errors.As(err, &e) {
		return stopreasons.Wrap(e.Code, err, format, args...)
	}
	return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, format, args...)
}
