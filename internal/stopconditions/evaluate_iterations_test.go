package stopconditions

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// The iteration budget stops the run before another agent call, not while
// the last allowed call's work is still being checked.
func TestIterationBudgetWaitsForTheNextCall(t *testing.T) {
	tests := []struct {
		name      string
		iteration int
		checking  bool
		stop      bool
	}{
		{"below, next is a call", 1, false, false},
		{"reached, next is a call", 2, false, true},
		{"reached, next checks the last call", 2, true, false},
		{"beyond, next checks", 3, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(&Snapshot{Iteration: tt.iteration, Checking: tt.checking, TotalMilestones: 1}, Rules{}, Limits{MaxIterations: 2})
			if !tt.stop {
				assert.Nil(t, v.Stop)
				return
			}
			if assert.NotNil(t, v.Stop) {
				assert.Equal(t, stopreasons.MaxIterations, v.Stop.Code)
			}
		})
	}
}
