// Package percentile is the one nearest-rank percentile of the measurements
// (the bench's figures, the Kubernetes pool's scale simulation), so that
// their p50 and p99 mean the same thing.
package percentile

import "math"

// NearestRank is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted,
// which must not be empty: the smallest sample with at least p% of the
// samples at or below it.
func NearestRank[T any](sorted []T, p float64) T {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}
