// Package stats computes small statistics over integers.
package stats

// Mean returns the arithmetic mean of xs, and 0 for an empty slice.
func Mean(xs []int) float64 {
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum / len(xs))
}
