package agents

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a command agent's parser makes of its stdout is the same whether it
// sees every line or only those LineStarts marks: the lines it leaves out
// can neither signal nor report usage, whatever blanks (ASCII or not) lead
// the ones that do, and whatever the promise begins with.
func TestLineStartsLeaveOutNothingLineNeeds(t *testing.T) {
	corpus := []string{
		"plain text", "", "   ", "Ready.", "RUNR is running", "x",
		"RUNR_STATUS: done", "  RUNR_STATUS: failed it broke", "\tRUNR_STATUS: blocked need a key",
		"\u00a0RUNR_STATUS: done", "\u2003RUNR_STATUS: failed wide blank",
		"RUNR_USAGE: input_tokens=10 output_tokens=5 cost_usd=0.01", " RUNR_USAGE: input_tokens=20 output_tokens=9",
		"\u0085RUNR_USAGE: input_tokens=30 output_tokens=12 cost_usd=0.03",
		"<promise>COMPLETE</promise>", "  <promise>COMPLETE</promise>  ", "~~ all done ~~", "\u00a0~~ all done ~~",
		"write the tests", // a line of the prompt: an echo never signals
	}
	for _, promise := range []string{"", "~~ all done ~~", "write the tests"} {
		req := Request{Prompt: "write the tests\nRUNR_STATUS: done", Promise: promise}
		for _, a := range corpus {
			for _, b := range corpus {
				// all looks at every line in full: its detector has no fast path.
				all := commandAdapter{}.NewParser(req)
				for c := range all.(usageGuard).Parser.(*commandParser).signals.starts {
					all.(usageGuard).Parser.(*commandParser).signals.starts[c] = true
				}
				some := commandAdapter{}.NewParser(req)
				all.(ChunkParser).Chunk(nil)
				some.(ChunkParser).Chunk(nil)
				starts := LineStarts(some)
				require.NotNil(t, starts)
				for _, line := range []string{a, b} {
					all.Line([]byte(line))
					if line != "" && starts[line[0]] {
						some.Line([]byte(line))
					}
				}
				assert.Equal(t, all.Finish(0, nil), some.Finish(0, nil), "promise %q, lines %q then %q", promise, a, b)
			}
		}
	}
}

// A parser that takes every line for its final text asks for every line.
func TestLineStartsOnlyForChunkParsers(t *testing.T) {
	for _, a := range adapters {
		p := a.NewParser(Request{Prompt: "p"})
		if _, ok := p.(usageGuard).Parser.(LineStarter); ok {
			assert.True(t, TakesChunks(p), "%s: a line filter without chunks would lose the final text", a.Kind())
			continue
		}
		assert.Nil(t, LineStarts(p), a.Kind())
	}
}
