package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
)

// guestPool keeps --size pooled guests up until interrupted: 'agentctl run
// --guest docker' then takes one instead of starting a guest (see
// backend.Claim). The guests it leaves unclaimed it takes down on exit.
func guestPool(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest pool", flag.ContinueOnError)
	where := fs.String("backend", "docker", "where the guests run (a run takes one with --guest BACKEND)")
	size := fs.Int("size", 1, "how many started guests to keep ready")
	apps := fs.String("apps", "desktop", "applications, as for 'guest up': desktop for 'agentctl run', exercise for 'agentctl exercise'")
	network := fs.Bool("network", false, "guests with a network, for 'agentctl run --network'")
	code := fs.Bool("code", false, "guests whose agentd runs code, for 'agentctl run --mode code'")
	browser := fs.Bool("browser", false, "guests whose agentd drives Chromium, for 'agentctl run --mode browser'")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("guest pool: unexpected arguments %q", fs.Args())
	case *size < 1 || *size > 16:
		return fmt.Errorf("--size %d: want 1..16 guests", *size)
	}
	b, err := backend.Get(*where)
	if err != nil {
		return err
	}
	d, err := backend.LookupDesktop(*apps)
	if err != nil {
		return err
	}
	// The spec a run or the exercise asks for: the desktop's own size
	// (backend.KeyOf).
	spec := backend.Spec{Desktop: d, Network: *network, Code: *code, Browser: *browser}
	if err := b.Check(spec); err != nil {
		return err
	}
	key := backend.KeyOf(b.Name(), spec)
	fmt.Printf("keeping %d %s guest(s) with --apps %s ready; Ctrl-C stops the pool and takes its unclaimed guests down\n", *size, b.Name(), key.Apps)
	if sp, ok := b.(backend.SharedPool); ok {
		// The pool is the cluster's, shared with other keepers.
		if err := sp.KeepPool(ctx, spec, *size, os.Stdout); !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	err = keepPool(ctx, b, spec, *size, os.Stdout)
	drainPool(key, os.Stdout)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// keepPool starts guests one at a time (a start is CPU-bound) whenever
// fewer than size are offered, until ctx ends.
func keepPool(ctx context.Context, b backend.Backend, spec backend.Spec, size int, out io.Writer) error {
	key := backend.KeyOf(b.Name(), spec)
	for {
		offered, err := backend.Offered(key)
		if err != nil {
			return err
		}
		if len(offered) < size {
			spec.Name = backend.PoolName()
			start := time.Now()
			inst, err := backend.Up(ctx, b, spec)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("pool guest %q did not come up: %w", spec.Name, err)
			}
			inst.Close()
			if err := backend.MarkPooled(spec.Name, key); err != nil {
				return err
			}
			fmt.Fprintf(out, "%s ready in %.1fs (%d of %d)\n", spec.Name, time.Since(start).Seconds(), len(offered)+1, size)
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// drainPool claims and takes down the guests still offered for key, so
// none is left running unowned.
func drainPool(key backend.PoolKey, out io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := backend.Offered(key)
	if err != nil {
		fmt.Fprintf(out, "warning: %v\n", err)
	}
	for _, n := range names {
		if ok, err := backend.TryClaim(n); err != nil || !ok {
			continue
		}
		if _, err := backend.Down(ctx, n, false); err != nil {
			fmt.Fprintf(out, "warning: %v\n", err)
		}
	}
}

// claimPooled takes a guest from a pool ('agentctl guest pool') matching
// spec on b, if there is one; down takes it down after the run.
func claimPooled(ctx context.Context, b backend.Backend, spec backend.Spec, out io.Writer) (backend.Instance, func(), error) {
	if sp, ok := b.(backend.SharedPool); ok {
		inst, err := sp.Claim(ctx, backend.KeyOf(b.Name(), spec))
		if err != nil || inst == nil {
			return nil, nil, err
		}
		fmt.Fprintf(out, "took the pooled %s guest %s for this run\n", b.Name(), inst.Describe().Instance)
		return inst, func() {
			downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := inst.Down(downCtx); err != nil {
				fmt.Fprintf(out, "warning: %v\n", err)
			}
		}, nil
	}
	inst, name, err := backend.Claim(ctx, backend.KeyOf(b.Name(), spec))
	if err != nil || inst == nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "took the pooled %s guest %s for this run\n", b.Name(), name)
	return inst, func() {
		defer inst.Close()
		downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, err := backend.Down(downCtx, name, false); err != nil {
			fmt.Fprintf(out, "warning: %v\n", err)
		}
	}, nil
}
