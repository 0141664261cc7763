package workpool

import (
	"sync"
	"testing"
)

// counts records which worker did which unit.
type counts struct {
	mu      sync.Mutex
	done    []int // times each unit ran
	workers map[int]bool
}

func (c *counts) Do(worker, unit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done[unit]++
	c.workers[worker] = true
}

func TestRunDoesEveryUnitOnce(t *testing.T) {
	var p Pool
	for _, tc := range []struct{ workers, units int }{{1, 1}, {1, 7}, {2, 7}, {4, 3}, {8, 100}, {0, 5}, {3, 0}} {
		c := &counts{done: make([]int, tc.units), workers: map[int]bool{}}
		p.Run(tc.workers, tc.units, c)
		for u, n := range c.done {
			if n != 1 {
				t.Errorf("workers %d units %d: unit %d ran %d times", tc.workers, tc.units, u, n)
			}
		}
		for w := range c.workers {
			if w < 0 || w >= max(min(tc.workers, tc.units), 1) {
				t.Errorf("workers %d units %d: worker index %d out of range", tc.workers, tc.units, w)
			}
		}
	}
}

type nop struct{}

func (nop) Do(int, int) {}

func TestRunAllocatesNothing(t *testing.T) {
	var p Pool
	job := &nop{}
	p.Run(2, 8, job) // first use binds the loop
	if n := testing.AllocsPerRun(50, func() { p.Run(2, 8, job) }); n != 0 {
		t.Errorf("Run allocates %v times per call, want 0", n)
	}
}
