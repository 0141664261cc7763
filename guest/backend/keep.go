package backend

import (
	"context"
	"fmt"
	"io"
	"time"
)

// KeepPool starts guests of b with spec one at a time (a start is
// CPU-bound) whenever fewer than size are offered, until ctx ends; what it
// does is told on out ('agentctl guest pool').
func KeepPool(ctx context.Context, b Backend, spec Spec, size int, out io.Writer) error {
	key := KeyOf(b.Name(), spec)
	for {
		offered, err := Offered(key)
		if err != nil {
			return err
		}
		if len(offered) < size {
			spec.Name = PoolName()
			start := time.Now()
			inst, err := Up(ctx, b, spec)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("pool guest %q did not come up: %w", spec.Name, err)
			}
			inst.Close()
			if err := MarkPooled(spec.Name, key); err != nil {
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

// DrainPool claims and takes down the guests still offered for key, so
// none is left running unowned; problems are warnings on out.
func DrainPool(key PoolKey, out io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := Offered(key)
	if err != nil {
		fmt.Fprintf(out, "warning: %v\n", err)
	}
	for _, n := range names {
		if ok, err := TryClaim(n); err != nil || !ok {
			continue
		}
		if _, err := Down(ctx, n, false); err != nil {
			fmt.Fprintf(out, "warning: %v\n", err)
		}
	}
}

// ClaimPooled takes a guest from a pool matching spec on b, if there is
// one (nil if not); down takes it down after the run.
func ClaimPooled(ctx context.Context, b Backend, spec Spec, out io.Writer) (Instance, func(), error) {
	if sp, ok := b.(SharedPool); ok {
		inst, err := sp.Claim(ctx, KeyOf(b.Name(), spec))
		if err != nil || inst == nil {
			return nil, nil, err
		}
		fmt.Fprintf(out, "took the pooled %s guest %s for this run\n", b.Name(), inst.Describe().Instance)
		return inst, downWarning(ctx, out, inst.Down), nil
	}
	inst, name, err := Claim(ctx, KeyOf(b.Name(), spec))
	if err != nil || inst == nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "took the pooled %s guest %s for this run\n", b.Name(), name)
	return inst, func() {
		defer inst.Close()
		downWarning(ctx, out, func(ctx context.Context) error {
			_, err := Down(ctx, name, false)
			return err
		})()
	}, nil
}

// Fresh gives one run a guest of b with spec: a pooled one when one
// matches, else one it starts (started; nil for a pooled guest). down takes
// it down, within a minute even after ctx ended; problems are warnings on
// out.
func Fresh(ctx context.Context, b Backend, spec Spec, out io.Writer) (inst, started Instance, down func(), err error) {
	if pooled, down, err := ClaimPooled(ctx, b, spec, out); err != nil || pooled != nil {
		return pooled, nil, down, err
	}
	fmt.Fprintf(out, "starting a %s guest for this run\n", b.Name())
	if inst, err = b.Up(ctx, spec); err != nil {
		return nil, nil, nil, err
	}
	return inst, inst, downWarning(ctx, out, inst.Down), nil
}

// downWarning is down run once the run is over: its own minute, a failure
// a warning on out.
func downWarning(ctx context.Context, out io.Writer, down func(context.Context) error) func() {
	return func() {
		downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := down(downCtx); err != nil {
			fmt.Fprintf(out, "warning: %v\n", err)
		}
	}
}
