package stopreasons

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", -time.Second: "0s", 400 * time.Millisecond: "0s", 45 * time.Second: "45s",
		12*time.Minute + 5*time.Second: "12m5s", 30 * time.Minute: "30m", 29*time.Minute + 59945*time.Millisecond: "30m",
		90 * time.Minute: "1h30m", time.Hour: "1h", time.Hour + 5*time.Second: "1h0m5s",
	} {
		assert.Equal(t, want, Duration(d), "%v", d)
		if d >= 0 {
			back, err := time.ParseDuration(want)
			require.NoError(t, err, "%s is given back as a flag", want)
			assert.Equal(t, d.Round(time.Second), back)
		}
	}
}

func TestTook(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Millisecond: "5ms", 999 * time.Millisecond: "999ms", 1240 * time.Millisecond: "1.2s",
		61 * time.Second: "1m1s", 2 * time.Hour: "2h",
	} {
		assert.Equal(t, want, Took(d), "%v", d)
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n          int
		noun, want string
	}{
		{1, "tick", "1 tick"}, {0, "tick", "0 ticks"}, {3, "tick", "3 ticks"},
		{2, "retry", "2 retries"}, {2, "day", "2 days"}, {2, "process", "2 processes"},
		{1, "failed attempt", "1 failed attempt"}, {4, "failed attempt", "4 failed attempts"},
	} {
		assert.Equal(t, tc.want, Plural(tc.n, tc.noun))
	}
}
