package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runr-dev/runr/internal/state"
)

func TestNewCmdReportParsesFlags(t *testing.T) {
	var got *ReportOptions
	run := func(o *ReportOptions) error { got = o; return nil }
	require.NoError(t, execute(t, NewCmdReport(testFactory(), run)))
	assert.Zero(t, got.Since, "all runs by default")
	assert.Equal(t, "", got.By)
	assert.Equal(t, "table", got.Format)

	require.NoError(t, execute(t, NewCmdReport(testFactory(), run), "--since", "1d12h", "--by", "day", "--format", "csv"))
	assert.Equal(t, 36*time.Hour, got.Since)
	assert.Equal(t, "day", got.By)
	assert.Equal(t, "csv", got.Format)
}

// A bad --since, --by or --format is a usage error (64), as prune's
// --older-than, naming the flag.
func TestReportBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"report", "--since", "banana"},
		{"report", "--since", "-3d"},
		{"report", "--by", "colour"},
		{"report", "--format", "yaml"},
		{"report", "extra"},
	} {
		io, out, errb := testStreams()
		code := Main(args, io)
		assert.Equal(t, 64, code, "%v: %s", args, errb)
		assert.Empty(t, out.String())
		if len(args) > 2 {
			assert.Contains(t, errb.String(), args[1], "%v names its flag", args)
		}
	}
}

func TestReportCountAndUSD(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		assert.Equal(t, want, reportCount(n))
	}
	assert.Equal(t, "$0.0014", state.USD(0.0014).Human())
	assert.Equal(t, "$0.00", state.USD(0).Human())
	assert.Equal(t, "$12.50", state.USD(12.5).Human())
}

// Text an agent wrote (a model name) is printed with its control
// characters made visible in every human and csv form.
func TestReportShowsModelNamesVisibly(t *testing.T) {
	var u state.Usage
	u.AddCall(state.Call{Agent: "command", Model: "evil\x1b[2Jmodel", InputTokens: 1, CostSource: state.CostUnknown})
	rep := state.BuildReport([]*state.Summary{{RunID: "r", RunStatus: "completed", Stop: "complete", Usage: u}}, state.ByModel)
	for _, render := range []func() string{
		func() string {
			io, out, _ := testStreams()
			require.NoError(t, writeReportTable(io.Out, rep))
			return out.String()
		},
		func() string { io, out, _ := testStreams(); writeReportMarkdown(io.Out, rep); return out.String() },
		func() string {
			io, out, _ := testStreams()
			require.NoError(t, writeReportCSV(io.Out, rep))
			return out.String()
		},
	} {
		s := render()
		assert.NotContains(t, s, "\x1b")
		assert.Contains(t, s, "model")
	}
}
