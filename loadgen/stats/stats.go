// Package stats is the little arithmetic `lnk measure` and `lnk loadgen`
// read their samples with: the mean and the quantiles by nearest rank.
package stats

import (
	"math"
	"sort"
)

// Quantile returns the q-quantile (0 <= q <= 1) of xs by the nearest rank:
// the smallest value with at least q of the values at or below it, so the p99
// of 20 values is the largest. It returns 0 for no values. xs is not changed.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(q * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// Mean returns the arithmetic mean of xs, or 0 for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
