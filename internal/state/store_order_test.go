package state

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Runs created within one second have ids whose random suffixes sort in
// any order: latest is still the run created last.
func TestLatestWithinOneSecond(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	second := time.Date(2026, 11, 21, 23, 0, 17, 0, time.UTC)
	var created []string
	for i, suffix := range []string{"ffffff", "000000", "7a7a7a", "123456"} {
		id := second.Format("20060102T150405Z") + "-" + suffix
		require.NoError(t, s.Create(&State{RunID: id, CreatedAt: second.Add(time.Duration(i) * time.Millisecond)}))
		created = append(created, id)
	}
	ids, err := s.List()
	require.NoError(t, err)
	assert.Equal(t, created, ids, "runs of one second are listed in creation order")
	latest, err := s.Resolve(Latest)
	require.NoError(t, err)
	assert.Equal(t, "20261121T230017Z-123456", latest)
}
