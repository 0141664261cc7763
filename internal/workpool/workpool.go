// Package workpool runs one call's units of work on a few goroutines that
// start with the call and end before it returns, without allocating in the
// steady state. The resampler (scaling) and the PNG writer (pngenc) split a
// screenshot into bands this way.
package workpool

import (
	"sync"
	"sync/atomic"
)

// A Job does unit of work unit with worker's private state. A worker's
// calls are sequential, so its state needs no lock.
type Job interface {
	Do(worker, unit int)
}

// Pool runs Jobs. Its zero value is ready; it must not be copied after
// first use, and runs one Job at a time.
type Pool struct {
	job     Job
	units   int32
	next    atomic.Int32 // next unit to claim
	workers atomic.Int32 // next worker index to hand out
	wg      sync.WaitGroup
	loop    func() // p.claim bound to loopOf, so that `go p.loop()` allocates nothing
	loopOf  *Pool
}

// Run calls job.Do for every unit in [0, units) on workers goroutines (the
// caller's own among them), each with a distinct worker index in
// [0, workers), and returns once all units are done. Units are claimed in
// order, a few at a time per worker as they finish.
func (p *Pool) Run(workers, units int, job Job) {
	workers = max(min(workers, units), 1)
	p.job, p.units = job, int32(units)
	p.next.Store(0)
	p.workers.Store(0)
	if workers > 1 {
		if p.loopOf != p {
			p.loop, p.loopOf = p.claimAndDone, p
		}
		p.wg.Add(workers - 1)
		for range workers - 1 {
			go p.loop()
		}
	}
	p.claim()
	p.wg.Wait()
	p.job = nil // don't keep the caller's data alive
}

func (p *Pool) claimAndDone() {
	defer p.wg.Done()
	p.claim()
}

// claim takes a worker index, then units until none is left.
func (p *Pool) claim() {
	w := int(p.workers.Add(1) - 1)
	for {
		u := p.next.Add(1) - 1
		if u >= p.units {
			return
		}
		p.job.Do(w, int(u))
	}
}
