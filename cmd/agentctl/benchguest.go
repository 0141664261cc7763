package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/tools/bench"
)

// benchGuestStart is 'agentctl bench --guest-start': measureGuestStart
// alone.
func benchGuestStart(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench --guest-start", flag.ContinueOnError)
	where := fs.String("backend", "docker", "the backend whose guests are started")
	rounds := fs.Int("rounds", 3, "cold and pooled starts measured, each")
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
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
	gs, err := measureGuestStart(ctx, b, *rounds)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(gs)
	}
	return gs.WriteTable(os.Stdout)
}

// dockerMissing says what the full bench's guest start figures need and
// this machine lacks: an engine and the guest image (the bench does not
// build it: that takes minutes).
func dockerMissing(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := docker.NewClient(ctx)
	if err != nil {
		return fmt.Sprintf("requires a Docker engine: %v", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, docker.DefaultImage); err != nil {
		return fmt.Sprintf("requires the %s image (make docker-image)", docker.DefaultImage)
	}
	return ""
}

// measureGuestStart measures what 'agentctl run --guest BACKEND' waits for
// before its first action: a cold start (the backend starts a guest) and a
// pooled one (a guest from 'agentctl guest pool' is claimed), each up to
// agentd's answer to a screenshot, alternating, medians of rounds; and the
// cold starts' milestones, when the backend tells them.
func measureGuestStart(ctx context.Context, b backend.Backend, rounds int) (*bench.GuestStart, error) {
	spec := backend.Spec{Desktop: backend.BrowserAndEditor}
	if err := b.Check(spec); err != nil {
		return nil, err
	}
	gs := bench.NewGuestStart(b.Name())
	gs.Rounds = rounds
	var cold, pooled []time.Duration
	marks := map[string][]time.Duration{}
	var order []string
	for i := range rounds {
		fmt.Fprintf(os.Stderr, "guest start: round %d of %d\n", i+1, rounds)
		d, ms, err := timeFirstAction(ctx, b, spec, false)
		if err != nil {
			return nil, fmt.Errorf("cold start: %w", err)
		}
		cold = append(cold, d)
		for _, m := range ms {
			if _, seen := marks[m.Name]; !seen {
				order = append(order, m.Name)
			}
			marks[m.Name] = append(marks[m.Name], m.at)
		}
		if d, _, err = timeFirstAction(ctx, b, spec, true); err != nil {
			return nil, fmt.Errorf("pooled start: %w", err)
		}
		pooled = append(pooled, d)
	}
	gs.Done()
	c, p := median(cold), median(pooled)
	gs.ColdMS, gs.PooledMS, gs.ColdPerPooled = ms(c), ms(p), float64(c)/float64(p)
	for _, name := range order {
		gs.ColdMilestones = append(gs.ColdMilestones, bench.Milestone{Name: name, AtMS: ms(median(marks[name]))})
	}
	slices.SortStableFunc(gs.ColdMilestones, func(a, b bench.Milestone) int { return cmp.Compare(a.AtMS, b.AtMS) })
	return gs, nil
}

// mark is a milestone of one start, after run start.
type mark struct {
	Name string
	at   time.Duration
}

// timeFirstAction times what freshGuest does, then a screenshot; with
// pooled, a pooled guest is started first, outside the time. A cold start
// also returns its milestones (the backend's, then first-action).
func timeFirstAction(ctx context.Context, b backend.Backend, spec backend.Spec, pooled bool) (time.Duration, []mark, error) {
	if sp, ok := b.(backend.SharedPool); ok && pooled {
		if err := sp.Offer(ctx, spec); err != nil {
			return 0, nil, err
		}
	} else if pooled {
		s := spec
		s.Name = backend.PoolName()
		inst, err := backend.Up(ctx, b, s)
		if err != nil {
			return 0, nil, err
		}
		inst.Close()
		if err := backend.MarkPooled(s.Name, backend.KeyOf(b.Name(), spec)); err != nil {
			return 0, nil, err
		}
	}
	start := time.Now()
	var g guestFlags
	down, started, err := freshGuest(ctx, b, &g, spec, io.Discard)
	if err != nil {
		return 0, nil, err
	}
	defer down()
	tok, err := g.token()
	if err != nil {
		return 0, nil, err
	}
	conn, err := guest.DialWith(ctx, g.addr, tok, g.options())
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	if _, err := conn.Screenshot(ctx); err != nil {
		return 0, nil, err
	}
	took := time.Since(start)
	if pooled {
		return took, nil, nil
	}
	if started == nil {
		return 0, nil, errors.New("a cold start took a pooled guest: is 'agentctl guest pool' running? Stop it while measuring")
	}
	var marks []mark
	if st, ok := started.(backend.StartTimer); ok {
		ms, err := st.StartMilestones(ctx)
		if err != nil {
			return 0, nil, err
		}
		for _, m := range ms {
			marks = append(marks, mark{Name: m.Name, at: m.At.Sub(start)})
		}
	}
	return took, append(marks, mark{Name: "first-action", at: took}), nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
