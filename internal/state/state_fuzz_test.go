package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// FuzzLoadFile feeds any bytes to the state decoder as a state.json. What it
// refuses is state_corrupt and the file is left as it was; what it accepts
// can be written again as Save writes it, and reads back the same, so a run
// that loads can always be saved and resumed. The task text is the
// exception: state.json never holds it (Save keeps it in task.md), so an
// inline "prompt" of an older file reads back empty from state.json alone.
// What it accepts is within the bounds of state.json too.
func FuzzLoadFile(f *testing.F) {
	f.Add([]byte(`{"schema_version":1,"run_id":"20261121T230017Z-3f9a1c","run_status":"running","phase":"verify","tick":3,` +
		`"created_at":"2026-11-21T23:00:17Z","updated_at":"2026-11-21T23:05:00+01:00",` +
		`"milestones":[{"goal":"a","status":"in_progress","attempts":[{"tick":1,"outcome":"failed","exit_code":1,"cost_usd":0.5}]}],` +
		`"agent_process":{"pgid":10,"pid":10,"start_time":123},"stop_reason":"budget_exhausted"}`))
	f.Add([]byte(`{"run_id":"x","stop_reason":{"code":"user_stopped","details":{"a":[1,"b",null,{"c":1e300}]}},"unknown":{"k":1}}`))
	f.Add([]byte(`{"run_id":"x","schema_version":2}`))
	f.Add([]byte(`{"run_id":""}`))
	f.Add([]byte(`{"run_id":"x","stopped_at":null,"milestones":null,"created_at":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"run_id":"x","tick":1e3}`))
	f.Add([]byte(`{"run_id":"x","task":{"file":"T.md","prompt":"- [ ] a\n"},"auto_resume":{"count":1,"history":[{"reason":"stalled"}]}}`))
	f.Add([]byte(`{"run_id":"x","milestones":[{"goal":"a","attempts":[{"tick":1,"outcome":"failed"},{"tick":2},{"tick":3},{"tick":4},` +
		`{"tick":5},{"tick":6},{"tick":7},{"tick":8},{"tick":9},{"tick":10},{"tick":11},{"tick":12},{"tick":13},{"tick":14},` +
		`{"tick":15},{"tick":16},{"tick":17},{"tick":18},{"tick":19},{"tick":20},{"tick":21,"cost_usd":0.1}],` +
		`"earlier_attempts":{"count":2,"outcomes":{"approved":2}}}]}`))
	f.Add([]byte(`{"run_id":"x"`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, stateFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := LoadFile(path)
		if err != nil {
			var se *stopreasons.Error
			if !errors.As(err, &se) || se.Code != stopreasons.StateCorrupt {
				t.Fatalf("refused with %v (%T), not state_corrupt", err, err)
			}
			after, rerr := os.ReadFile(path)
			if rerr != nil || !bytes.Equal(after, data) {
				t.Fatalf("a refused state.json was changed")
			}
			return
		}
		if st.RunID == "" {
			t.Fatal("accepted a state without a run_id")
		}
		for _, m := range st.Milestones {
			if len(m.Attempts) > MaxAttempts || len(m.Goal) > MaxGoalBytes {
				t.Fatalf("a loaded milestone is beyond the bounds: %d attempts, a goal of %d bytes", len(m.Attempts), len(m.Goal))
			}
		}
		if len(st.AutoResume.History) > MaxAutoResumeHistory {
			t.Fatalf("a loaded auto_resume.history has %d records", len(st.AutoResume.History))
		}
		st.Task.Prompt = ""
		again, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			t.Fatalf("a state that loads cannot be saved again: %v", err)
		}
		if err := os.WriteFile(path, again, 0o644); err != nil {
			t.Fatal(err)
		}
		st2, err := LoadFile(path)
		if err != nil {
			t.Fatalf("a state written from a loaded one does not load: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(st, st2) {
			t.Fatalf("a state does not read back as written:\n%+v\n%+v\n%s", st, st2, again)
		}
	})
}
