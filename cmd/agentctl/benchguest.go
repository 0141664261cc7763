package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
)

// benchGuestStart measures what 'agentctl run --guest BACKEND' waits for
// before its first action: a cold start (the backend starts a guest) and a
// pooled one (a guest from 'agentctl guest pool' is claimed), each up to
// agentd's answer to a screenshot, alternating, medians of --rounds.
func benchGuestStart(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench --guest-start", flag.ContinueOnError)
	where := fs.String("backend", "docker", "the backend whose guests are started")
	rounds := fs.Int("rounds", 3, "cold and pooled starts measured, each")
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 || fs.NArg() > 0 {
		return fmt.Errorf("bench --guest-start: want --rounds ≥ 1 and no arguments")
	}
	b, err := backend.Get(*where)
	if err != nil {
		return err
	}
	spec := backend.Spec{Desktop: backend.BrowserAndEditor}
	if err := b.Check(spec); err != nil {
		return err
	}
	var cold, pooled []time.Duration
	for i := range *rounds {
		fmt.Fprintf(os.Stderr, "round %d of %d\n", i+1, *rounds)
		d, err := timeFirstAction(ctx, b, spec, false)
		if err != nil {
			return fmt.Errorf("cold start: %w", err)
		}
		cold = append(cold, d)
		if d, err = timeFirstAction(ctx, b, spec, true); err != nil {
			return fmt.Errorf("pooled start: %w", err)
		}
		pooled = append(pooled, d)
	}
	c, p := median(cold), median(pooled)
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{
			"backend": b.Name(), "rounds": *rounds,
			"cold_first_action_ms": c.Milliseconds(), "pooled_first_action_ms": p.Milliseconds(),
			"cold_per_pooled": float64(c) / float64(p),
		})
	}
	fmt.Printf("%s guest, run start → first action (screenshot), median of %d:\n  cold start  %8.0f ms\n  from a pool %8.0f ms  (%.0f× faster)\n",
		b.Name(), *rounds, ms(c), ms(p), float64(c)/float64(p))
	return nil
}

// timeFirstAction times what freshGuest does, then a screenshot; with
// pooled, a pooled guest is started first, outside the time.
func timeFirstAction(ctx context.Context, b backend.Backend, spec backend.Spec, pooled bool) (time.Duration, error) {
	if pooled {
		s := spec
		s.Name = backend.PoolName()
		inst, err := backend.Up(ctx, b, s)
		if err != nil {
			return 0, err
		}
		inst.Close()
		if err := backend.MarkPooled(s.Name, backend.KeyOf(b.Name(), spec)); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	var g guestFlags
	down, err := freshGuest(ctx, b, &g, spec, io.Discard)
	if err != nil {
		return 0, err
	}
	defer down()
	tok, err := g.token()
	if err != nil {
		return 0, err
	}
	conn, err := guest.Dial(ctx, g.addr, tok)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.Screenshot(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
