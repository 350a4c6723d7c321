package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScanTimelineDamage(t *testing.T) {
	huge := `{"seq":2,"type":"agent_output","data":{"out":"` + strings.Repeat("x", maxEventLine) + `"}}`
	big := `{"seq":3,"type":"agent_output","data":{"out":"` + strings.Repeat(`\"}{`, (maxEventLine-100)/4) + `"}}`
	raw := strings.Join([]string{
		`{"seq":1,"ts":"2026-11-21T23:00:00Z","type":"run_started","tick":0}`,
		huge,
		big,
		``,
		`{"seq":4,"ts":"2026-11-21T23:00:17.5Z","type":"phase_ended","tick":2,"data":{"exit_code":1}}`,
		`{"seq":5,"ts":"2026-11-21T23:00:18Z","type":"phase_sta`,
	}, "\n")
	path := filepath.Join(t.TempDir(), timelineFile)
	require.NoError(t, os.WriteFile(path, []byte(raw), 0o644))

	sum, warns := scanTimeline(path, nil)
	assert.True(t, sum.Present)
	assert.EqualValues(t, 3, sum.Events, "a line under the bound counts, however odd its data")
	assert.Equal(t, map[string]int{"run_started": 1, "agent_output": 1, "phase_ended": 1}, sum.ByType)
	assert.EqualValues(t, 4, sum.LastSeq)
	assert.Equal(t, "phase_ended", sum.LastType)
	assert.Equal(t, 2, sum.LastTick)
	require.NotNil(t, sum.LastTS)
	assert.Equal(t, time.Date(2026, 11, 21, 23, 0, 17, 5e8, time.UTC), *sum.LastTS)
	assert.Equal(t, []string{
		"timeline.jsonl: last line truncated, ignored",
		"timeline.jsonl: 1 damaged line ignored (first: line 2)",
	}, warns, "a line over the bound is damage, not held in memory")
}
