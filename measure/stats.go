package measure

import "lnk.dev/linkharness/loadgen/stats"

// Spread is a mean and two quantiles of some values.
type Spread struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

func spread(xs []float64) Spread {
	return Spread{Mean: stats.Mean(xs), P50: stats.Quantile(xs, 0.5), P99: stats.Quantile(xs, 0.99)}
}
