package runner

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/internal/bareloop"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// benchSteps is how many calls of three moves one benchmark run makes,
// as the bench's runner-overhead figure does.
const benchSteps = 100

// shotDriver answers every call at once with the same screenshot: the
// benchmarks time the loop, not a desktop.
type shotDriver struct {
	png  []byte
	size scaling.Size
}

func (d shotDriver) Run(_ context.Context, as []actions.Action, h computer.Hooks) (computer.Screenshot, error) {
	for i, a := range as {
		if h.Done != nil {
			h.Done(computer.ActionResult{Index: i, Type: string(a.Type), OK: true})
		}
	}
	return computer.Screenshot{PNG: d.png, Transform: scaling.Transform{
		Screen: d.size, Crop: scaling.Rect{W: d.size.W, H: d.size.H}, Image: d.size}}, nil
}

// newShotDriver makes a 1280×800 screenshot of about the size a desktop's
// fitted screenshot has (~200 KB): blocks of noise over a flat background.
func newShotDriver(b *testing.B) shotDriver {
	b.Helper()
	const w, h = 1280, 800
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	seed := uint32(1)
	for y := range h {
		for x := range w {
			c := color.RGBA{240, 240, 240, 255}
			if (x/64+y/40)%3 == 0 && x%64 < 11 {
				seed = seed*1664525 + 1013904223
				v := uint8(seed >> 24)
				c = color.RGBA{v, v / 2, 255 - v, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return shotDriver{png: buf.Bytes(), size: scaling.Size{W: w, H: h}}
}

// reportPerStep reports the loop's own time per step: wall time minus the
// model server's.
func reportPerStep(b *testing.B, wall, served time.Duration, steps int) {
	b.ReportMetric(float64((wall-served).Microseconds())/float64(steps)/1000, "ms/step")
}

func served(srv *respserver.Server) time.Duration {
	var t time.Duration
	for _, r := range srv.Requests() {
		t += r.Handled
	}
	return t
}

// BenchmarkRunnerStep is a plain computer run (no stream, ledger, budget or
// control) through the real SDK against respserver, with an observer as the
// bench has; compare with BenchmarkBareLoopStep, the same steps through a
// bare openai-go loop (go test -run - -bench Step ./runner/).
func BenchmarkRunnerStep(b *testing.B) {
	d := newShotDriver(b)
	turns := bareloop.Turns(benchSteps)
	var wall, srvTime time.Duration
	for b.Loop() {
		srv, url := respserver.Start(turns...)
		ts := New(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey), option.WithMaxRetries(0)), d)
		events := 0
		start := time.Now()
		_, err := ts.Run(context.Background(), RunOptions{Model: "bench", Input: "move the mouse", MaxSteps: len(turns),
			OnEvent: func(Event) { events++ }}, CallOptions{})
		wall += time.Since(start)
		srvTime += served(srv)
		if err == nil {
			err = srv.Err()
		}
		ts.Close()
		srv.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	reportPerStep(b, wall, srvTime, b.N*len(turns))
}

// BenchmarkBareLoopStep is BenchmarkRunnerStep's peer: decode the actions,
// run them, send the screenshot back.
func BenchmarkBareLoopStep(b *testing.B) {
	d := newShotDriver(b)
	turns := bareloop.Turns(benchSteps)
	ctx := context.Background()
	var wall, srvTime time.Duration
	for b.Loop() {
		srv, url := respserver.Start(turns...)
		api := openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey), option.WithMaxRetries(0))
		start := time.Now()
		if err := bareloop.Run(ctx, api, d, "bench", "move the mouse", nil); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		srvTime += served(srv)
		err := srv.Err()
		srv.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	reportPerStep(b, wall, srvTime, b.N*len(turns))
}
