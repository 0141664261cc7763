// Package cputime reports a benchmark's process CPU time per operation next
// to ns/op: on a loaded machine wall time mostly measures the neighbours.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Loop runs op in b.Loop, reporting allocations and the CPU time per
// operation as "cpu-ms/op"; an error from op fails b.
func Loop(b *testing.B, op func() error) {
	b.ReportAllocs()
	start := cpuNow()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNow()-start)/float64(b.N)/1e6, "cpu-ms/op")
}
