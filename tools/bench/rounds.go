package bench

import (
	"context"
	"fmt"
	"time"
)

// contender is one way of doing a thing; run takes one sample.
type contender struct {
	id   string
	peer bool
	run  func(ctx context.Context) (time.Duration, error)
	// warmed, if set, is called after the untimed first run, so that a
	// contender can forget what it counted during it.
	warmed func()
}

// roundsResult holds the samples of each contender, and why a peer stopped.
type roundsResult struct {
	samples map[string][]time.Duration
	failed  map[string]error
}

// missing says why contender id has no figure to show: the error it failed
// with, else absent (why it was not run: "" when it was there) if it has no
// samples; "" when it ran.
func (r roundsResult) missing(id, absent string) string {
	if err, ok := r.failed[id]; ok {
		return "failed: " + err.Error()
	}
	if len(r.samples[id]) == 0 {
		return absent
	}
	return ""
}

// schedule shapes runRounds.
type schedule struct {
	budget    time.Duration // about this much time per contender
	turn      time.Duration // per contender and round; at least one sample
	minRounds int
}

// turns is the schedule of a comparison with budget per contender: about
// ten turns each, so that a contender far slower than a turn still gets a
// sample in every round.
func turns(budget time.Duration, minRounds int) schedule {
	return schedule{budget: budget, turn: min(max(budget/10, 10*time.Millisecond), 200*time.Millisecond), minRounds: minRounds}
}

// runRounds runs contenders interleaved: each round gives every contender a
// turn, so that load changes hit all alike, until each has spent about the
// budget and at least minRounds rounds have run. Each contender is run once
// first, untimed, to warm caches and buffers. A peer that fails is dropped
// and reported; a failure of our own ends the run.
func runRounds(ctx context.Context, cs []contender, sc schedule) (roundsResult, error) {
	res := roundsResult{samples: map[string][]time.Duration{}, failed: map[string]error{}}
	active := make([]contender, 0, len(cs))
	fail := func(c contender, err error) error {
		if !c.peer || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", c.id, err)
		}
		res.failed[c.id] = err
		return nil
	}
	for _, c := range cs {
		if _, err := c.run(ctx); err != nil {
			if err := fail(c, err); err != nil {
				return res, err
			}
			continue
		}
		if c.warmed != nil {
			c.warmed()
		}
		active = append(active, c)
	}
	spent := map[string]time.Duration{}
	for round := 0; ; round++ {
		busy := false
		for i := 0; i < len(active); i++ {
			c := active[i]
			if spent[c.id] >= sc.budget && round >= sc.minRounds {
				continue
			}
			busy = true
			for start := time.Now(); ; {
				d, err := c.run(ctx)
				if err != nil {
					if err := fail(c, err); err != nil {
						return res, err
					}
					active = append(active[:i], active[i+1:]...)
					i--
					break
				}
				res.samples[c.id] = append(res.samples[c.id], d)
				if elapsed := time.Since(start); elapsed >= sc.turn {
					spent[c.id] += elapsed
					break
				}
			}
		}
		if !busy {
			return res, nil
		}
	}
}
