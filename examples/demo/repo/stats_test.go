package stats

import "testing"

func TestMean(t *testing.T) {
	tests := []struct {
		name string
		xs   []int
		want float64
	}{
		{"empty", nil, 0},
		{"one", []int{4}, 4},
		{"fraction", []int{1, 2}, 1.5},
		{"negative", []int{-3, 1}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Mean(tt.xs); got != tt.want {
				t.Errorf("Mean(%v) = %v, want %v", tt.xs, got, tt.want)
			}
		})
	}
}
