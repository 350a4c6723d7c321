package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pollTypes(t *testing.T, f *TimelineFollower) []string {
	t.Helper()
	var got []string
	require.NoError(t, f.Poll(func(ev Event) error {
		got = append(got, ev.Type())
		return nil
	}))
	return got
}

// A follower hands over each complete event once, waits for the rest of a
// line still being written, and passes over damage and lines too long.
func TestTimelineFollowerReadsAGrowingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timeline.jsonl")
	f := FollowTimeline(path, 200)
	defer f.Close()
	assert.Empty(t, pollTypes(t, f), "no file yet: no events")

	w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer w.Close()
	write := func(s string) {
		_, err := w.WriteString(s)
		require.NoError(t, err)
	}

	write(`{"seq":1,"type":"run_started","tick":0}` + "\n" + `{"seq":2,"type":"ti`)
	assert.Equal(t, []string{"run_started"}, pollTypes(t, f))
	assert.Empty(t, pollTypes(t, f), "the half-written line waits")

	write(`ck","tick":1}` + "\nnot json\n\n" + `{"seq":3,"type":"stop","tick":1}` + "\n")
	assert.Equal(t, []string{"tick", "stop"}, pollTypes(t, f))

	// A line longer than the bound, written in two parts, is passed over.
	write(`{"seq":4,"type":"huge","data":{"x":"` + strings.Repeat("x", 300))
	assert.Empty(t, pollTypes(t, f))
	write(`"}}` + "\n" + `{"seq":5,"type":"after","tick":2}` + "\n")
	assert.Equal(t, []string{"after"}, pollTypes(t, f))

	// More than one read's worth at once.
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		b.WriteString(`{"seq":6,"type":"many","tick":3,"data":{"n":"` + strings.Repeat("y", 20) + `"}}` + "\n")
	}
	write(b.String())
	assert.Len(t, pollTypes(t, f), 3000)
}

// A torn last line that a resume cuts off is dropped, and the events
// appended after the cut are read whole.
func TestTimelineFollowerAfterACut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timeline.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"seq":1,"type":"run_started","tick":0}`+"\n"+`{"seq":2,"type":"ti`), 0o644))
	f := FollowTimeline(path, 0)
	defer f.Close()
	assert.Equal(t, []string{"run_started"}, pollTypes(t, f))
	require.NoError(t, os.Truncate(path, int64(len(`{"seq":1,"type":"run_started","tick":0}`+"\n"))))
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = w.WriteString(`{"seq":2,"type":"run_resumed","tick":0}` + "\n")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, []string{"run_resumed"}, pollTypes(t, f))
}
