package state

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// stopRequest is the content of runs/<id>/stop-request; its presence is
// what counts, the content is for people.
type stopRequest struct {
	By          string    `json:"by"`
	RequestedAt time.Time `json:"requested_at"`
}

// RequestStop asks the live process of run id to stop after its current
// tick (`runr stop`). by says who asked, for the record.
func (s *Store) RequestStop(id string, by string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := s.mustExist(id); err != nil {
		return err
	}
	return s.WriteJSON(id, stopFile, stopRequest{By: by, RequestedAt: time.Now().UTC()})
}

// StopRequested reports whether a stop was requested for run id.
func (s *Store) StopRequested(id string) bool {
	if !ValidRunID(id) {
		return false
	}
	_, err := os.Stat(filepath.Join(s.RunDir(id), stopFile))
	return err == nil
}

// ClearStopRequest removes the stop request of run id, if any; a resumed run
// must not stop again on an old request.
func (s *Store) ClearStopRequest(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	path := filepath.Join(s.RunDir(id), stopFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "remove stop request %s", path)
	}
	return nil
}

// Claim is a live run's claim on part of a checkout, so that two runs
// of the same checkout do not edit the same files (file_collision).
type Claim struct {
	RunID     string    `json:"run_id"`
	Checkout  string    `json:"checkout"`        // absolute path of the working tree
	Allow     []string  `json:"allow,omitempty"` // scope.allow globs; empty claims the whole checkout
	PID       int       `json:"pid"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Store) claimPath(id string) string {
	return filepath.Join(s.Home, activeDir, id+".json")
}

// WriteClaim records c as active/<run id>.json, atomically.
func (s *Store) WriteClaim(c Claim) error {
	if err := checkID(c.RunID); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return stopreasons.Wrap(stopreasons.InternalError, err, "encode claim of run %s", c.RunID)
	}
	path := s.claimPath(c.RunID)
	if err := WriteAtomic(path, append(data, '\n')); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "write claim %s", path)
	}
	return nil
}

// RemoveClaim removes the claim of run id, if any.
func (s *Store) RemoveClaim(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	path := s.claimPath(id)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "remove claim %s", path)
	}
	return nil
}

// Claims returns every claim in active/, ordered by run id. Whether the
// claiming run is still alive is for the caller to judge (Locked); a claim
// file that cannot be read is state_corrupt, naming the file to remove.
func (s *Store) Claims() ([]Claim, error) {
	dir := filepath.Join(s.Home, activeDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "list claims in %s", dir)
	}
	var claims []Claim
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidRunID(id) || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := readFileNoFollow(path)
		if err != nil {
			return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err, "cannot read claim %s", path)
		}
		var c Claim
		if err := json.Unmarshal(data, &c); err != nil || c.RunID != id {
			if err == nil {
				err = errors.New("run_id does not match the file name")
			}
			return nil, stopreasons.Wrap(stopreasons.StateCorrupt, err,
				"claim %s is invalid; remove it if run %s is not running", path, id)
		}
		claims = append(claims, c)
	}
	slices.SortFunc(claims, func(a, b Claim) int { return strings.Compare(a.RunID, b.RunID) })
	return claims, nil
}
