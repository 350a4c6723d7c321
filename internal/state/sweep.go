package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// StaleAfter is how old a leftover of an interrupted write or creation must
// be before a runr that does not hold its run removes it. Every write of
// the store takes milliseconds, so a leftover this old has no writer.
const StaleAfter = time.Minute

// Sweep removes what runr processes killed in the middle of a write left in
// the store (`runr status` calls it):
//
//   - runs/.creating-<id>-<pid>: a run that was never completed, once its
//     creator is dead or it is older than StaleAfter;
//   - a run directory without state.json that holds nothing but an empty
//     logs/ and temporary files (what runr before atomic creation left when
//     killed as it created a run), older than StaleAfter;
//   - .tmp-* files older than StaleAfter in runs no live process holds, and
//     in active/.
//
// A run directory without state.json that holds anything else is left
// alone: it is reported as unreadable, for a person to look at. Sweep does
// what it can and never fails: on a read-only store it removes nothing. It
// returns the paths it removed.
func (s *Store) Sweep(now time.Time) []string {
	var removed []string
	remove := func(path string) {
		if os.RemoveAll(path) == nil {
			removed = append(removed, path)
		}
	}
	old := func(fi fs.FileInfo) bool { return now.Sub(fi.ModTime()) > StaleAfter }

	runs := filepath.Join(s.Home, runsDir)
	entries, _ := os.ReadDir(runs)
	for _, e := range entries {
		name, path := e.Name(), filepath.Join(runs, e.Name())
		fi, err := os.Lstat(path)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, creatingDir) && fi.IsDir():
			if old(fi) || !creatorAlive(name) {
				remove(path)
			}
		case strings.HasPrefix(name, tempPrefix) && fi.Mode().IsRegular():
			if old(fi) || (strings.HasPrefix(name, probePrefix) && !creatorAlive(name)) {
				remove(path)
			}
		case ValidRunID(name) && fi.IsDir():
			if _, err := os.Lstat(filepath.Join(path, stateFile)); errors.Is(err, fs.ErrNotExist) {
				if old(fi) && onlyLogsDir(path) {
					remove(path)
				}
				continue
			}
			if held, _, err := s.Locked(name); err != nil || held {
				continue
			}
			removed = append(removed, removeTemps(path, old)...)
		}
	}
	removed = append(removed, removeTemps(filepath.Join(s.Home, activeDir), old)...)
	return removed
}

// creatorAlive reports whether the process that named a .creating-<id>-<pid>
// directory may still be running. A pid that cannot be read counts as
// alive: the directory is then left until it is StaleAfter old.
func creatorAlive(name string) bool {
	i := strings.LastIndexByte(name, '-')
	pid, err := strconv.Atoi(name[i+1:])
	if err != nil || pid <= 0 {
		return true
	}
	return !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// onlyLogsDir reports whether dir holds nothing but an empty logs/ and
// temporary files.
func onlyLogsDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		switch {
		case e.Name() == logsDir && e.Type().IsDir():
			if logs, err := os.ReadDir(filepath.Join(dir, logsDir)); err != nil || len(logs) > 0 {
				return false
			}
		case strings.HasPrefix(e.Name(), tempPrefix) && e.Type().IsRegular():
		default:
			return false
		}
	}
	return true
}

// removeTemps removes the .tmp-* files of dir for which remove says yes and
// returns their paths.
func removeTemps(dir string, remove func(fs.FileInfo) bool) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || !remove(fi) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if os.Remove(path) == nil {
			out = append(out, path)
		}
	}
	return out
}

// removeRunTemps removes the temporary files of run id, whose lock the
// caller has just taken: no other runr writes state.json, config.json or
// the reports of that run now. `runr stop` writes its request without the
// lock, so its temporary file is removed only once it is StaleAfter old.
func (s *Store) removeRunTemps(id string) {
	now := time.Now()
	removeTemps(s.RunDir(id), func(fi fs.FileInfo) bool {
		if strings.HasPrefix(fi.Name(), tempPrefix+stopFile+"-") {
			return now.Sub(fi.ModTime()) > StaleAfter
		}
		return true
	})
	// The run's claim is written by the runr holding the run too.
	removeTemps(filepath.Join(s.Home, activeDir), func(fi fs.FileInfo) bool {
		return strings.HasPrefix(fi.Name(), tempPrefix+id+".json")
	})
}
