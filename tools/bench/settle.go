package bench

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// effectTimeout bounds the wait for a screenshot that shows a click.
const effectTimeout = 3 * time.Second

// Settle figure IDs.
const (
	idWait   = "wait"
	idEffect = "effect"
)

// measureSettle times wait on the still desktop, and a click on the effect
// target until a screenshot (the batch's own, else the next ones) shows it.
func (b *sizeBench) measureSettle(ctx context.Context) ([]Figure, error) {
	unsettled, inBatch := 0, 0
	cs := []contender{
		{id: idWait, run: func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			r, err := b.client.Wait(ctx)
			d := time.Since(start)
			if err != nil {
				return 0, err
			}
			if r.Settled == nil || !*r.Settled {
				unsettled++
			}
			return d, nil
		}, warmed: func() { unsettled = 0 }},
		{id: idEffect, run: func(ctx context.Context) (time.Duration, error) {
			d, shown, err := b.clickUntilShown(ctx)
			if shown {
				inBatch++
			}
			return d, err
		}, warmed: func() { inBatch = 0 }},
	}
	res, err := runRounds(ctx, cs, turns(b.duration, 3))
	if err != nil {
		return nil, fmt.Errorf("settling: %w", err)
	}
	wait := timeFigure(idWait, "wait on a still screen (request → settled)", res.samples[idWait])
	wait.Note = fmt.Sprintf("needs %v unchanged: %.0f ms over it at p50", wire.DefaultWaitQuiet, wait.P50-ms(wire.DefaultWaitQuiet))
	if unsettled > 0 {
		wait.Note += fmt.Sprintf("; %d did not settle", unsettled)
	}
	effect := timeFigure(idEffect, "click → a screenshot ("+fitViewString+") shows it", res.samples[idEffect])
	effect.Note = fmt.Sprintf("%d of %d in the batch's own screenshot", inBatch, effect.N)
	return []Figure{wait, effect}, nil
}

// clickUntilShown clicks the effect target in one batch and returns the
// time until a screenshot in hand differs from the one before (the desktop
// is otherwise still, and the pointer is not captured), and whether the
// batch's own screenshot already did. The last screenshot is then checked
// for the target's new colour.
func (b *sizeBench) clickUntilShown(ctx context.Context) (time.Duration, bool, error) {
	b.client.SetView(fitView)
	before, err := b.client.Screenshot(ctx)
	if err != nil {
		return 0, false, err
	}
	c := b.desk.target.Min.Add(b.desk.target.Max).Div(2)
	ix, iy, err := before.Transform.ToImage(c.X, c.Y)
	if err != nil {
		return 0, false, fmt.Errorf("effect target: %w", err)
	}
	from := b.desk.mark()
	start := time.Now()
	res, err := b.client.Batch(ctx, []actions.Action{{Type: actions.Click, X: ix, Y: iy, Button: actions.Left}}, nil)
	if err != nil {
		return 0, false, err
	}
	shot, at := res.Screenshot.PNG, time.Now()
	inBatch := !bytes.Equal(shot, before.PNG)
	for bytes.Equal(shot, before.PNG) {
		if time.Since(start) > effectTimeout {
			return 0, false, fmt.Errorf("no screenshot showed the click within %v", effectTimeout)
		}
		s, err := b.client.Screenshot(ctx)
		if err != nil {
			return 0, false, err
		}
		shot, at = s.PNG, time.Now()
	}
	// The desktop's report of the press carries the colour it flipped to.
	pressed := func(e probe.Event) bool { return e.Kind == probe.ButtonPress }
	if _, err := b.desk.waitFor(ctx, from, eventTimeout, "button press", pressed); err != nil {
		return 0, false, err
	}
	if err := showsColor(shot, image.Pt(ix, iy), b.desk.shownTargetColor()); err != nil {
		return 0, false, err
	}
	return at.Sub(start), inBatch, nil
}

// showsColor checks that the PNG has about colour want at p.
func showsColor(data []byte, p image.Point, want color.RGBA) error {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("effect screenshot: %w", err)
	}
	r, g, bl, _ := img.At(p.X, p.Y).RGBA()
	got := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}
	near := func(a, b uint8) bool { return max(a, b)-min(a, b) < 8 }
	if !near(got.R, want.R) || !near(got.G, want.G) || !near(got.B, want.B) {
		return fmt.Errorf("effect screenshot: the target at %v is %v, want %v", p, got, want)
	}
	return nil
}
