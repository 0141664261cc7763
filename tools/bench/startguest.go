package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/agentd-dev/agentd/docker"
	"github.com/agentd-dev/agentd/guest/backend"
)

// DockerMissing says what the full bench's guest start figures need and
// this machine lacks: an engine and the guest image (the bench does not
// build it: that takes minutes).
func DockerMissing(ctx context.Context) string {
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

// MeasureGuestStart measures what 'agentctl run --guest BACKEND' waits for
// before its first action: a cold start (the backend starts a guest) and a
// pooled one (a guest from 'agentctl guest pool' is claimed), each up to
// agentd's answer to a screenshot, alternating, medians of rounds; and the
// cold starts' milestones, when the backend tells them.
func MeasureGuestStart(ctx context.Context, b backend.Backend, rounds int, progress io.Writer) (*GuestStart, error) {
	spec := backend.Spec{Desktop: backend.BrowserAndEditor}
	if err := b.Check(spec); err != nil {
		return nil, err
	}
	gs := NewGuestStart(b.Name())
	gs.Rounds = rounds
	var cold, pooled []time.Duration
	marks := map[string][]time.Duration{}
	var order []string
	for i := range rounds {
		fmt.Fprintf(progress, "guest start: round %d of %d\n", i+1, rounds)
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
		gs.ColdMilestones = append(gs.ColdMilestones, Milestone{Name: name, AtMS: ms(median(marks[name]))})
	}
	slices.SortStableFunc(gs.ColdMilestones, func(a, b Milestone) int { return cmp.Compare(a.AtMS, b.AtMS) })
	return gs, nil
}

// mark is a milestone of one start, after run start.
type mark struct {
	Name string
	at   time.Duration
}

// timeFirstAction times what a run's fresh guest takes (backend.Fresh), then a screenshot; with
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
	inst, started, down, err := backend.Fresh(ctx, b, spec, io.Discard)
	if err != nil {
		return 0, nil, err
	}
	defer down()
	conn, err := backend.Dial(ctx, inst)
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
