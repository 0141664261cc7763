// Package guestprobe is the guest's half of the bench's probe: the program
// agentd-bench-probe serves timed runs of agentd's capture, scaling and
// encoding and of the peers' in-process capture libraries (Serve, Screen),
// over the protocol of tools/bench/probe. Only cmd/agentd-bench-probe links
// it: it holds the guest packages and X11 clients the host must not.
package guestprobe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"

	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// Func runs a probe once and returns the bytes it produced (0 if none).
type Func func(ctx context.Context) (int, error)

// Serve announces probes on out and answers requests from in until in ends
// or ctx is cancelled.
func Serve(ctx context.Context, in io.Reader, out io.Writer, probes map[string]Func, unavailable map[string]string) error {
	names := make([]string, 0, len(probes))
	for n := range probes {
		names = append(names, n)
	}
	sort.Strings(names)
	enc := json.NewEncoder(out)
	if err := enc.Encode(probe.Hello{Probes: names, Unavailable: unavailable}); err != nil {
		return fmt.Errorf("probe: write hello: %w", err)
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var req probe.Request
		var rep probe.Reply
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			rep.Err = fmt.Sprintf("bad request: %v", err)
		} else if f, ok := probes[req.Probe]; !ok {
			rep.Err = fmt.Sprintf("unknown probe %q", req.Probe)
		} else if req.Allocs > 0 {
			rep = allocs(ctx, f, req.Allocs)
		} else {
			rep = timed(ctx, f)
		}
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("probe: write reply: %w", err)
		}
	}
	return sc.Err()
}

func timed(ctx context.Context, f Func) probe.Reply {
	start := time.Now()
	n, err := f(ctx)
	rep := probe.Reply{NS: time.Since(start).Nanoseconds(), Bytes: n}
	if err != nil {
		rep.Err = err.Error()
	}
	return rep
}

// allocs counts what n runs allocate once warm; the collection first keeps
// earlier garbage out of the count.
func allocs(ctx context.Context, f Func, n int) probe.Reply {
	if _, err := f(ctx); err != nil {
		return probe.Reply{Err: err.Error()}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := f(ctx); err != nil {
			return probe.Reply{Err: err.Error()}
		}
	}
	runtime.ReadMemStats(&after)
	return probe.Reply{
		AllocBytes: float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		Allocs:     float64(after.Mallocs-before.Mallocs) / float64(n),
	}
}
