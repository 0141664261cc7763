// Package probe measures, inside the guest, what the host cannot time from
// outside: agentd's capture, scaling and encoding on their own, and the
// in-process capture libraries that peers use (kbinani/screenshot, robotgo).
//
// `agentctl bench` starts it as the binary agentd-bench-probe (Binary,
// found next to agentd) with the guest's DISPLAY and XAUTHORITY, then asks for one measurement at a time, one JSON
// line each way over stdin and stdout. One sample per request lets the host
// interleave these samples with its own end-to-end ones, so that all of them
// see the same machine load.
package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"
)

// Binary is the name of the probe's program (cmd/agentd-bench-probe).
const Binary = "agentd-bench-probe"

// The probes. Capture and encode probes work on the guest's real screen.
const (
	Capture        = "capture"         // agentd's capture (MIT-SHM when available)
	ScaleFit       = "scale-fit"       // agentd's scaler: native → fit within 1280×800
	EncodeNative   = "encode-native"   // agentd's PNG encoder, native image
	EncodeFit      = "encode-fit"      // agentd's PNG encoder, the 1280×800 image
	PipelineFit    = "pipeline-fit"    // capture + scale + encode, as agentd does per screenshot
	KbinaniCapture = "kbinani-capture" // kbinani/screenshot capture alone
	KbinaniPNG     = "kbinani-png"     // kbinani/screenshot + image/png (default level)
	RobotgoCapture = "robotgo-capture" // robotgo.CaptureImg
	RobotgoPNG     = "robotgo-png"     // robotgo.CaptureImg + image/png (default level)
)

// FitWidth and FitHeight bound the scaled view, as the model sees the screen.
const (
	FitWidth  = 1280
	FitHeight = 800
)

// Func runs a probe once and returns the bytes it produced (0 if none).
type Func func(ctx context.Context) (int, error)

// Hello is the probe's first line: what it can measure, and why not the rest.
type Hello struct {
	Probes      []string          `json:"probes"`
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// Request asks for one timed run of Probe, or with Allocs > 0 for the
// allocations of that many runs.
type Request struct {
	Probe  string `json:"probe"`
	Allocs int    `json:"allocs,omitempty"`
}

// Reply answers one Request.
type Reply struct {
	NS    int64  `json:"ns,omitempty"`
	Bytes int    `json:"bytes,omitempty"`
	Err   string `json:"err,omitempty"`
	// AllocBytes and Allocs are per run, over the whole probe process.
	AllocBytes float64 `json:"alloc_bytes,omitempty"`
	Allocs     float64 `json:"allocs,omitempty"`
}

// Serve announces probes on out and answers requests from in until in ends
// or ctx is cancelled.
func Serve(ctx context.Context, in io.Reader, out io.Writer, probes map[string]Func, unavailable map[string]string) error {
	names := make([]string, 0, len(probes))
	for n := range probes {
		names = append(names, n)
	}
	sort.Strings(names)
	enc := json.NewEncoder(out)
	if err := enc.Encode(Hello{Probes: names, Unavailable: unavailable}); err != nil {
		return fmt.Errorf("probe: write hello: %w", err)
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var req Request
		var rep Reply
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

func timed(ctx context.Context, f Func) Reply {
	start := time.Now()
	n, err := f(ctx)
	rep := Reply{NS: time.Since(start).Nanoseconds(), Bytes: n}
	if err != nil {
		rep.Err = err.Error()
	}
	return rep
}

// allocs counts what n runs allocate once warm; the collection first keeps
// earlier garbage out of the count.
func allocs(ctx context.Context, f Func, n int) Reply {
	if _, err := f(ctx); err != nil {
		return Reply{Err: err.Error()}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := f(ctx); err != nil {
			return Reply{Err: err.Error()}
		}
	}
	runtime.ReadMemStats(&after)
	return Reply{
		AllocBytes: float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		Allocs:     float64(after.Mallocs-before.Mallocs) / float64(n),
	}
}
