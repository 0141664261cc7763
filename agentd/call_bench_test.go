//go:build linux && cgo

package agentd

import (
	"context"
	"image/color"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/runner/computer"
)

// BenchmarkComputerCall5 times one computer call of 5 actions and its
// screenshot (fitted into 1280×800) on Xvfb, through the three ways a call
// can go, taking turns within each iteration so load hits them alike:
// per-action (one request per action, then one screenshot: what the runner
// did before), batch (one request, no approval hook) and gated batch (one
// request that waits for the client's go before each step: a BeforeAction
// hook that approves at once). It reports each one's median and the ratios.
func BenchmarkComputerCall5(b *testing.B) {
	d := newDesktop(b)
	d.client.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	ctx := context.Background()
	if _, err := d.client.Screenshot(ctx); err != nil {
		b.Fatal(err)
	}
	call := []actions.Action{
		{Type: actions.Move, X: 300, Y: 200},
		{Type: actions.Click, X: 320, Y: 220},
		{Type: actions.Keypress, Keys: []string{"shift"}},
		{Type: actions.Scroll, X: 320, Y: 220, ScrollY: 60},
		{Type: actions.Click, X: 340, Y: 240},
	}
	approve := computer.Hooks{Before: func(context.Context, computer.Step) error { return nil }}
	paths := []struct {
		name string
		run  func() (computer.Screenshot, error)
	}{
		{"per-action", func() (computer.Screenshot, error) {
			return computer.Sequential(d.client).Run(ctx, call, computer.Hooks{})
		}},
		{"batch", func() (computer.Screenshot, error) { return d.client.Run(ctx, call, computer.Hooks{}) }},
		{"gated", func() (computer.Screenshot, error) { return d.client.Run(ctx, call, approve) }},
	}
	times := make([][]time.Duration, len(paths))
	n := 0
	for b.Loop() {
		for i, p := range paths {
			// A screen that changed, as after real actions: no path gets a
			// screenshot the capture or the encoder could reuse.
			n++
			d.rec.Fill(b, 100, 100, 600, 300, color.RGBA{uint8(n), uint8(n >> 8), 40, 255})
			start := time.Now()
			shot, err := p.run()
			if err != nil {
				b.Fatal(err)
			}
			if shot.Transform.Image.W != 1280 {
				b.Fatalf("%s: screenshot %v", p.name, shot.Transform.Image)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	med := make([]float64, len(paths))
	for i, p := range paths {
		slices.Sort(times[i])
		med[i] = float64(times[i][len(times[i])/2].Microseconds()) / 1000
		b.ReportMetric(med[i], p.name+"-p50-ms")
	}
	b.ReportMetric(med[0]/med[1], "per-action/batch")
	b.ReportMetric(med[0]/med[2], "per-action/gated")
}
