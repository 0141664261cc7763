// Package cputime reports a benchmark's process CPU time per operation next
// to ns/op: on a loaded machine wall time mostly measures the neighbours.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Timer measures from Start to Report.
type Timer struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Start starts a Timer.
func Start() Timer { return Timer{cpuNow()} }

// Report adds the CPU time per operation since Start as "cpu-ms/op".
func (c Timer) Report(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N)/1e6, "cpu-ms/op")
}
