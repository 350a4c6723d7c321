package state

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

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
