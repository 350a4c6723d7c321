package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/stopreasons"
)

func TestNewRunID(t *testing.T) {
	east := time.FixedZone("UTC+5", 5*3600)
	id := NewRunID(time.Date(2026, 11, 22, 4, 0, 17, 0, east))
	assert.True(t, strings.HasPrefix(id, "20261121T230017Z-"), id)
	assert.True(t, ValidRunID(id), id)
	assert.NotEqual(t, id, NewRunID(time.Date(2026, 11, 22, 4, 0, 17, 0, east)), "random suffix")
}

func TestValidRunID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"20261121T230017Z-3f9a1c", true},
		{"00000000T000000Z-000000", true},
		{"", false},
		{"latest", false},
		{"a..b", false},     // not a branch name: runr/<id> must be one
		{"nightly.", false}, // nor this
		{"x.lock", false},   // nor this
		{"v1.2-a_b", true},
		{"20261121T230017Z-3F9A1C", false},
		{"20261121T230017Z-3f9a1", false},
		{"20261121T230017Z-3f9a1cc", false},
		{"20261121t230017Z-3f9a1c", false},
		{"20261121T230017-3f9a1cZ", false},
		{"2026112xT230017Z-3f9a1c", false},
		{"20261121T230017Z_3f9a1c", false},
		{"20261121T230017Z-3f9a1g", false},
		{"../../../../etc/passwd", false},
		{"20261121T230017Z/../..x", false},
		{" 20261121T230017Z-3f9a1c", false},
		// --run-id names
		{"nightly", true},
		{"0", true},
		{"job-7.retry_2", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"Nightly", false},
		{"-x", false},
		{".x", false},
		{"../x", false},
		{"a/b", false},
		{"a b", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ValidRunID(tt.id), "%q", tt.id)
	}
}

func TestOpenCreatesLayout(t *testing.T) {
	home := filepath.Join(t.TempDir(), "a", "runr")
	s, err := Open(home)
	require.NoError(t, err)
	assert.Equal(t, home, s.Home)
	for _, d := range []string{"runs", "active", "worktrees"} {
		fi, err := os.Stat(filepath.Join(home, d))
		require.NoError(t, err)
		assert.True(t, fi.IsDir(), d)
	}
	entries, err := os.ReadDir(filepath.Join(home, "runs"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the write probe is removed")
}

func TestOpenNotWritable(t *testing.T) {
	// A regular file where a directory should be fails for every user, root too.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	_, err := Open(filepath.Join(blocker, "runr"))
	require.Error(t, err)
	assert.Equal(t, stopreasons.EnvironmentInvalid, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), blocker)
	assert.Contains(t, err.Error(), "--home")
}

func TestDefaultHome(t *testing.T) {
	assert.Equal(t, filepath.Join("/r", ".git", "runr"), DefaultHome("/r/.git/"))
}

func TestResolveAndList(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)

	_, err = s.Resolve("latest")
	assert.Equal(t, stopreasons.RunNotFound, stopreasons.CodeOf(err), "latest of an empty store")

	base := time.Date(2026, 11, 21, 23, 0, 17, 0, time.UTC)
	var ids []string
	// Created out of order: List and latest go by id, that is by creation time.
	for _, d := range []time.Duration{time.Hour, 0, 2 * time.Hour} {
		st := &State{RunID: NewRunID(base.Add(d))}
		require.NoError(t, s.Create(st))
		ids = append(ids, st.RunID)
	}
	// Stray entries in runs/ are not runs.
	require.NoError(t, os.Mkdir(filepath.Join(s.Home, "runs", "Notes"), 0o755))

	list, err := s.List()
	require.NoError(t, err)
	assert.Equal(t, []string{ids[1], ids[0], ids[2]}, list)

	unknown := NewRunID(base.Add(3 * time.Hour))
	tests := []struct {
		ref      string
		want     string
		code     stopreasons.Code
		mentions []string
	}{
		{ref: "latest", want: ids[2]},
		{ref: ids[0], want: ids[0]},
		{ref: unknown, code: stopreasons.RunNotFound, mentions: []string{unknown, "runr status"}},
		{ref: "", code: stopreasons.UsageError},
		{ref: "Notes", code: stopreasons.UsageError, mentions: []string{`"Notes"`}},
		{ref: "notes", code: stopreasons.RunNotFound, mentions: []string{"notes"}},
		{ref: "../../etc", code: stopreasons.UsageError},
		// Upper-case hex is not an id (a random suffix may have no letter to
		// upper-case, so the test spells one out).
		{ref: ids[0][:len("20261121T230017Z-")] + "ABCDEF", code: stopreasons.UsageError},
		{ref: "LATEST", code: stopreasons.UsageError},
	}
	for _, tt := range tests {
		got, err := s.Resolve(tt.ref)
		if tt.code == "" {
			require.NoError(t, err, tt.ref)
			assert.Equal(t, tt.want, got, tt.ref)
			continue
		}
		require.Error(t, err, tt.ref)
		assert.Equal(t, tt.code, stopreasons.CodeOf(err), "%q: %v", tt.ref, err)
		for _, m := range tt.mentions {
			assert.Contains(t, err.Error(), m)
		}
	}
}

func TestLogPath(t *testing.T) {
	s := &Store{Home: "/h"}
	id := "20261121T230017Z-3f9a1c"
	assert.Equal(t, "/h/runs/"+id+"/logs/tick-0007-implement.log", s.LogPath(id, 7, PhaseImplement))
	assert.Equal(t, "/h/runs/"+id+"/logs/tick-0000-verify.log", s.LogPath(id, 0, PhaseVerify))
	assert.Equal(t, "/h/runs/"+id+"/logs/tick-12345-review.log", s.LogPath(id, 12345, PhaseReview))
}

func TestCreateSaveLoad(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	st := &State{
		RunID:      NewRunID(time.Now()),
		RunStatus:  stopreasons.RunRunning,
		Milestones: []Milestone{{Goal: "add a flag", Status: MilestoneInProgress}},
		StopReason: NewStopReason(stopreasons.Timeout, 0, "time is up"),
	}
	require.NoError(t, s.Create(st))
	assert.Equal(t, SchemaVersion, st.SchemaVersion)
	assert.False(t, st.CreatedAt.IsZero())
	fi, err := os.Stat(filepath.Join(s.RunDir(st.RunID), "logs"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())

	err = s.Create(&State{RunID: st.RunID})
	require.Error(t, err, "an existing run is never overwritten")
	got, err := s.Load(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, "add a flag", got.Milestones[0].Goal)

	// A run saves while it holds its lock.
	lock, err := s.Acquire(st.RunID)
	require.NoError(t, err)
	defer lock.Release()
	first := st.UpdatedAt
	st.Tick = 3
	require.NoError(t, s.Save(st))
	assert.False(t, st.UpdatedAt.Before(first))
	got, err = s.Load(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Tick)
	assert.Equal(t, stopreasons.Timeout, got.StopReason.Code)
	assert.Equal(t, 124, got.StopReason.ExitCode)
	assert.True(t, got.UpdatedAt.Equal(st.UpdatedAt))

	_, err = s.Load("Nope")
	assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(err))
	_, err = s.Load(NewRunID(time.Now().Add(time.Hour)))
	assert.Equal(t, stopreasons.RunNotFound, stopreasons.CodeOf(err))

	temps, err := s.LeftoverTemps()
	require.NoError(t, err)
	assert.Empty(t, temps)
}

func TestLoadOlderAndUnknownFields(t *testing.T) {
	s, st := newRun(t)
	doc := `{"schema_version":1,"run_id":"` + st.RunID + `","run_status":"stopped","tick":7,
		"stop_reason":"timeout","field_from_the_future":{"x":[1,2]},"counters":{"noop":2,"new_counter":9}}`
	require.NoError(t, os.WriteFile(s.StatePath(st.RunID), []byte(doc), 0o644))

	got, err := s.Load(st.RunID)
	require.NoError(t, err)
	assert.Equal(t, 7, got.Tick)
	assert.Equal(t, 2, got.Counters.Noop)
	require.NotNil(t, got.StopReason)
	assert.Equal(t, stopreasons.Timeout, got.StopReason.Code)
	assert.Equal(t, 124, got.StopReason.ExitCode)
	assert.Equal(t, "resource_limit", got.StopReason.Family)
}

func TestLoadCorruptLeavesFileUntouched(t *testing.T) {
	s, st := newRun(t)
	path := s.StatePath(st.RunID)
	valid, err := os.ReadFile(path)
	require.NoError(t, err)

	tests := []struct {
		name    string
		content string
		mention string
	}{
		{"garbage", "\x00\x01not json at all", "not valid JSON"},
		{"truncated", string(valid[:len(valid)/2]), "not valid JSON"},
		{"empty", "", "not valid JSON"},
		{"null", "null", "no run_id"},
		{"no run id", `{"schema_version":1}`, "no run_id"},
		{"trailing garbage", string(valid) + "}", "not valid JSON"},
		{"newer schema", `{"schema_version":2,"run_id":"` + st.RunID + `"}`, "schema_version 2"},
		{"newer schema, incompatible", `{"schema_version":9,"run_id":"` + st.RunID + `","tick":"many"}`, "newer runr"},
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o600))
			require.NoError(t, os.Chtimes(path, old, old))

			_, err := s.Load(st.RunID)
			require.Error(t, err)
			assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err), err.Error())
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tt.mention)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.content, string(after), "byte-identical")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.True(t, fi.ModTime().Equal(old), "not rewritten")
		})
	}

	require.NoError(t, os.Remove(path))
	_, err = s.Load(st.RunID)
	assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err), "a run directory without state.json")
}

func TestWriteJSON(t *testing.T) {
	s, st := newRun(t)
	require.NoError(t, s.WriteJSON(st.RunID, "stop.json", map[string]any{"code": "timeout", "exit_code": 124}))
	data, err := os.ReadFile(filepath.Join(s.RunDir(st.RunID), "stop.json"))
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"code\": \"timeout\",\n  \"exit_code\": 124\n}\n", string(data))

	for _, name := range []string{"", ".", "..", "../escape.json", "logs/x.json"} {
		assert.Error(t, s.WriteJSON(st.RunID, name, 1), "%q", name)
	}
	assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(s.WriteJSON("../x", "a.json", 1)))
	_, err = os.Stat(filepath.Join(s.Home, "runs", "escape.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestLeftoverTemps(t *testing.T) {
	s, st := newRun(t)
	inRun := filepath.Join(s.RunDir(st.RunID), ".tmp-state.json-123")
	inActive := filepath.Join(s.Home, "active", ".tmp-"+st.RunID+".json-9")
	for _, p := range []string{inRun, inActive, filepath.Join(s.RunDir(st.RunID), "tmp-not-ours")} {
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	temps, err := s.LeftoverTemps()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{inRun, inActive}, temps)
}

func TestStopRequest(t *testing.T) {
	s, st := newRun(t)
	assert.False(t, s.StopRequested(st.RunID))
	require.NoError(t, s.RequestStop(st.RunID, "runr stop (pid 42)"))
	assert.True(t, s.StopRequested(st.RunID))

	var req map[string]any
	data, err := os.ReadFile(filepath.Join(s.RunDir(st.RunID), "stop-request"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &req))
	assert.Equal(t, "runr stop (pid 42)", req["by"])

	require.NoError(t, s.ClearStopRequest(st.RunID))
	assert.False(t, s.StopRequested(st.RunID))
	require.NoError(t, s.ClearStopRequest(st.RunID), "clearing nothing is fine")

	unknown := NewRunID(time.Now().Add(time.Hour))
	assert.Equal(t, stopreasons.RunNotFound, stopreasons.CodeOf(s.RequestStop(unknown, "x")))
	assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(s.RequestStop("../..", "x")))
	assert.False(t, s.StopRequested("../.."))
}

func TestClaims(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	claims, err := s.Claims()
	require.NoError(t, err)
	assert.Empty(t, claims)

	now := time.Now().UTC().Truncate(time.Second)
	b := Claim{RunID: NewRunID(now.Add(time.Minute)), Checkout: "/repo", PID: 2, CreatedAt: now}
	a := Claim{RunID: NewRunID(now), Checkout: "/repo", Allow: []string{"cmd/**", "docs/*.md"}, PID: 1, CreatedAt: now}
	require.NoError(t, s.WriteClaim(b))
	require.NoError(t, s.WriteClaim(a))
	claims, err = s.Claims()
	require.NoError(t, err)
	assert.Equal(t, []Claim{a, b}, claims)

	require.NoError(t, s.RemoveClaim(a.RunID))
	require.NoError(t, s.RemoveClaim(a.RunID), "removing a missing claim is fine")
	claims, err = s.Claims()
	require.NoError(t, err)
	assert.Equal(t, []Claim{b}, claims)

	assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(s.WriteClaim(Claim{RunID: "../x"})))

	bad := filepath.Join(s.Home, "active", a.RunID+".json")
	require.NoError(t, os.WriteFile(bad, []byte("{"), 0o644))
	_, err = s.Claims()
	assert.Equal(t, stopreasons.StateCorrupt, stopreasons.CodeOf(err))
	assert.Contains(t, err.Error(), bad)
}

func TestLockInProcess(t *testing.T) {
	s, st := newRun(t)
	held, _, err := s.Locked(st.RunID)
	require.NoError(t, err)
	assert.False(t, held, "no lock file yet")
	assert.Equal(t, stopreasons.RunCrashed, s.DisplayStatus(st), "running without a holder")

	l, err := s.Acquire(st.RunID)
	require.NoError(t, err)
	_, err = s.Acquire(st.RunID)
	assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err), "one holder per run, even within a process")
	require.NoError(t, l.Release())
	l, err = s.Acquire(st.RunID)
	require.NoError(t, err)
	require.NoError(t, l.Release())

	st.RunStatus = stopreasons.RunStopped
	assert.Equal(t, stopreasons.RunStopped, s.DisplayStatus(st))

	_, err = s.Acquire(NewRunID(time.Now().Add(time.Hour)))
	assert.Equal(t, stopreasons.RunNotFound, stopreasons.CodeOf(err))
}

func TestNamedRuns(t *testing.T) {
	s := boundStore(t)
	base := time.Date(2026, 11, 21, 23, 0, 17, 0, time.UTC)
	// A name says nothing of when its run was created: List and latest
	// go by the created_at of its state.
	older := &State{RunID: NewRunID(base), CreatedAt: base}
	require.NoError(t, s.Create(older))
	named := &State{RunID: "aaa-nightly", CreatedAt: base.Add(time.Hour)}
	require.NoError(t, s.Create(named))
	early := &State{RunID: "zzz-early", CreatedAt: base.Add(-time.Hour)}
	require.NoError(t, s.Create(early))
	newer := &State{RunID: NewRunID(base.Add(2 * time.Hour)), CreatedAt: base.Add(2 * time.Hour)}
	require.NoError(t, s.Create(newer))

	list, err := s.List()
	require.NoError(t, err)
	assert.Equal(t, []string{"zzz-early", older.RunID, "aaa-nightly", newer.RunID}, list)
	require.NoError(t, os.RemoveAll(s.RunDir(newer.RunID)))
	latest, err := s.Resolve(Latest)
	require.NoError(t, err)
	assert.Equal(t, "aaa-nightly", latest)

	got, err := s.Load("aaa-nightly")
	require.NoError(t, err)
	assert.Equal(t, "aaa-nightly", got.RunID)
	for _, bad := range []string{"Nightly", "latest", "../x", strings.Repeat("a", 64), ""} {
		assert.Equal(t, stopreasons.UsageError, stopreasons.CodeOf(CheckRunName(bad)), "%q", bad)
	}
	assert.NoError(t, CheckRunName("aaa-nightly"))
}

func TestCreateRunLockedHoldsTheNewRun(t *testing.T) {
	s := boundStore(t)
	lock, err := s.CreateRunLocked(&State{RunID: "job-1"}, nil)
	require.NoError(t, err)
	live, _, err := s.Locked("job-1")
	require.NoError(t, err)
	assert.True(t, live, "the run is held as soon as it exists")
	_, err = s.Acquire("job-1")
	assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err))
	_, err = s.CreateRunLocked(&State{RunID: "job-1"}, nil)
	assert.Equal(t, stopreasons.RunLocked, stopreasons.CodeOf(err), "an existing id is refused: %v", err)
	require.NoError(t, lock.Release())
	again, err := s.Acquire("job-1")
	require.NoError(t, err)
	again.Release()
}
