//go:build linux && cgo

package agentd

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/agentd/input/xtest"
	"github.com/agentd-dev/agentd/capture"
	"github.com/agentd-dev/agentd/capture/render"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/scaling"
)

// desktop is agentd serving a real Xvfb, with an event recorder covering
// the screen, and a guest client connected to it.
type desktop struct {
	x      *xvfbtest.Server
	rec    *xrecorder.Recorder
	client *guest.Client
	srv    *Server
	addr   string // host:port of the HTTP server
}

func newDesktop(tb testing.TB) *desktop {
	tb.Helper()
	d := newDesktopServer(tb, 1440, 900, tb.Logf)
	d.client = dial(tb, d.addr)
	return d
}

// newRestartableDesktop is newDesktop on an Xvfb the test may take Down
// and Restart (xvfbtest.StartRestartable).
func newRestartableDesktop(tb testing.TB) *desktop {
	tb.Helper()
	d := serveDesktop(tb, xvfbtest.StartRestartable(tb, 1440, 900), tb.Logf)
	d.client = dial(tb, d.addr)
	return d
}

// newDesktopServer is agentd on a real w×h Xvfb with a recorder, and no
// controller connected yet.
func newDesktopServer(tb testing.TB, w, h int, logf func(string, ...any)) *desktop {
	tb.Helper()
	return serveDesktop(tb, xvfbtest.Start(tb, w, h), logf)
}

// serveDesktop is agentd on x with a recorder, and no controller
// connected yet.
func serveDesktop(tb testing.TB, x *xvfbtest.Server, logf func(string, ...any)) *desktop {
	tb.Helper()
	rec := xrecorder.Start(tb, x.Display)
	screen, err := capture.Open(x.Display, capture.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { screen.Close() })
	input, err := xtest.Open(x.Display)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { input.Close() })
	exec := executor.New(input, executor.Options{Frames: screen})
	srv, err := New(Config{Token: []byte(testToken), Screen: screen, Imager: &render.Renderer{Frames: screen}, Exec: exec, Logf: logf,
		InputCheck: func(context.Context) error { _, _, err := input.ScreenSize(); return err }})
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &desktop{x: x, rec: rec, srv: srv, addr: strings.TrimPrefix(hs.URL, "http://")}
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img
}

func near(a, b int) bool { return a-b <= 1 && b-a <= 1 }

func TestE2EClickThroughScaledViewLandsOnScreenPixel(t *testing.T) {
	d := newDesktop(t)
	d.client.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	shot, err := d.client.Screenshot(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	if b := decodePNG(t, shot.PNG).Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Fatalf("image %v, want 1280×800", b)
	}
	for _, p := range []actions.Point{{X: 640, Y: 400}, {X: 0, Y: 0}, {X: 1279, Y: 799}, {X: 101, Y: 57}} {
		d.rec.Clear()
		if _, err := d.client.Click(ctx5(t), p.X, p.Y, actions.Left); err != nil {
			t.Fatal(err)
		}
		ev := d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease }, 5*time.Second)
		wx, wy, _ := shot.Transform.ToScreen(p.X, p.Y)
		if !near(ev.X, wx) || !near(ev.Y, wy) {
			t.Errorf("image (%d,%d) clicked screen (%d,%d), want (%d,%d)", p.X, p.Y, ev.X, ev.Y, wx, wy)
		}
		// 1440/1280 = 1.125: the mapped point is within one scaled pixel.
		if float64(ev.X) < float64(p.X)*1.125-1.2 || float64(ev.X) > float64(p.X+1)*1.125+0.2 {
			t.Errorf("image x %d → screen x %d is not within its scaled pixel", p.X, ev.X)
		}
	}
	if _, err := d.client.Click(ctx5(t), 1280, 10, actions.Left); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("a point just outside the image: %v", err)
	}
}

func TestE2EScreenshotPixelsScaledAndCropped(t *testing.T) {
	d := newDesktop(t)
	red, green := color.RGBA{220, 20, 20, 255}, color.RGBA{20, 200, 40, 255}
	d.rec.Fill(t, 100, 100, 200, 100, red)
	d.rec.Fill(t, 800, 500, 100, 100, green)
	check := func(name string, view wire.View, sx, sy int, want color.RGBA) {
		t.Helper()
		d.client.SetView(view)
		shot, err := d.client.Screenshot(ctx5(t))
		if err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, shot.PNG)
		ix, iy, err := shot.Transform.ToImage(sx, sy)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, g, b, _ := img.At(ix, iy).RGBA()
		got := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
		if got != want {
			t.Errorf("%s: screen (%d,%d) → image (%d,%d) is %v, want %v", name, sx, sy, ix, iy, got, want)
		}
	}
	check("native", wire.View{}, 150, 150, red)
	check("native", wire.View{}, 850, 550, green)
	check("fit 1280×800", wire.View{Width: 1280, Height: 800, Fit: true}, 200, 150, red)
	check("fit 1280×800", wire.View{Width: 1280, Height: 800, Fit: true}, 850, 550, green)
	crop := &scaling.Rect{X: 700, Y: 400, W: 400, H: 300}
	check("crop", wire.View{Crop: crop}, 850, 550, green)
	check("crop scaled", wire.View{Crop: crop, Width: 200, Height: 150}, 850, 550, green)
}

func TestE2EBatchModifiersTextAndKeys(t *testing.T) {
	d := newDesktop(t)
	text := "Zoë Ñúñez-Łukasz, 東京 €5 ✓ 🙂\nline two\ttab"
	res, err := d.client.Batch(ctx5(t), []actions.Action{
		{Type: actions.Click, X: 300, Y: 200, Button: actions.Left, Keys: []string{"SHIFT"}},
		{Type: actions.Scroll, X: 400, Y: 300, ScrollY: 250, Keys: []string{"ctrl"}},
		{Type: actions.Drag, Path: []actions.Point{{X: 10, Y: 10}, {X: 200, Y: 120}, {X: 400, Y: 20}}, Keys: []string{"alt"}},
		{Type: actions.TypeText, Text: text},
		{Type: actions.Keypress, Keys: []string{"CTRL", "A"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 5 || res.Screenshot.PNG == nil {
		t.Fatalf("results %d, screenshot %d bytes", len(res.Results), len(res.Screenshot.PNG))
	}
	if s := res.Results[1].ScrollSteps; s == nil || s.Y <= 0 {
		t.Fatalf("scroll steps %+v", s)
	}
	evs := d.rec.WaitUntil(t, func(evs []xrecorder.Event) bool {
		n := 0
		for _, e := range evs {
			if e.Kind == xrecorder.KeyRelease {
				n++
			}
		}
		return strings.Contains(xrecorder.Typed(evs), "tab") && n > 0
	}, 10*time.Second)
	var click, wheel, dragPress, dragRelease *xrecorder.Event
	for i := range evs {
		e := &evs[i]
		switch {
		case e.Kind == xrecorder.ButtonPress && e.Button == 1 && click == nil:
			click = e
		case e.Kind == xrecorder.ButtonPress && e.Button == 5 && wheel == nil:
			wheel = e
		case e.Kind == xrecorder.ButtonPress && e.Button == 1:
			dragPress = e
		case e.Kind == xrecorder.ButtonRelease && e.Button == 1:
			dragRelease = e
		}
	}
	if click == nil || click.State&xrecorder.ShiftMask == 0 || click.X != 300 || click.Y != 200 {
		t.Errorf("shift+click: %v", click)
	}
	if wheel == nil || wheel.State&xrecorder.ControlMask == 0 {
		t.Errorf("ctrl+scroll: %v", wheel)
	}
	if dragPress == nil || dragRelease == nil || dragPress.X != 10 || dragRelease.X != 400 || dragRelease.State&xrecorder.Mod1Mask == 0 {
		t.Errorf("alt+drag: press %v release %v", dragPress, dragRelease)
	}
	if got := xrecorder.Typed(evs); !strings.Contains(got, text) {
		t.Errorf("typed %q, want %q", got, text)
	}
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
		t.Errorf("left pressed after the batch: keys %v mask %#x", keys, mask)
	}
}

func TestE2ECancelledTypingLeavesNothingPressed(t *testing.T) {
	d := newDesktop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := d.client.Batch(ctx, []actions.Action{
		{Type: actions.Keypress, Keys: []string{"shift", "x"}},
		{Type: actions.TypeText, Text: strings.Repeat("The quick brown fox. ", 500)},
	}, nil)
	var ge *guest.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ge) || ge.FailedIndex != 1 || len(ge.Results) != 2 {
		t.Fatalf("err = %v", err)
	}
	d.rec.Sync(t)
	typed := len(d.rec.Typed())
	if typed == 0 || typed >= 500*21 {
		t.Fatalf("typed %d characters before the cancel; want some but not all", typed)
	}
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
		t.Errorf("left pressed after the cancel: keys %v mask %#x", keys, mask)
	}
	// The session serves on.
	if _, err := d.client.Screenshot(ctx5(t)); err != nil {
		t.Fatal(err)
	}
}

func TestE2EWaitSettles(t *testing.T) {
	d := newDesktop(t)
	r, err := d.client.Wait(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Settled == nil || !*r.Settled {
		t.Fatalf("a still screen did not settle: %+v", r)
	}
}

// TestE2ESteadyStateAllocations bounds what one screenshot allocates once
// buffers are warm: a 1440×900 frame is 5 MB, so anything near that means a
// per-frame copy crept in.
func TestE2ESteadyStateAllocations(t *testing.T) {
	d := newDesktop(t)
	d.client.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	n := 50
	if raceEnabled {
		n = 3
	}
	for range 3 {
		if _, err := d.client.Screenshot(ctx5(t)); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := d.client.Screenshot(ctx5(t)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perShot := (after.TotalAlloc - before.TotalAlloc) / uint64(n)
	// Client and server share this process: the client's copy of the PNG
	// (≈0.5 MB) and websocket buffers are counted too.
	if perShot > 2<<20 {
		t.Fatalf("%d bytes allocated per screenshot (client and server together)", perShot)
	}
	t.Logf("%d KiB allocated per screenshot, client and server together", perShot>>10)
}

func BenchmarkE2EScreenshotNative(b *testing.B) { benchScreenshot(b, wire.View{}) }
func BenchmarkE2EScreenshotFit1280x800(b *testing.B) {
	benchScreenshot(b, wire.View{Width: 1280, Height: 800, Fit: true})
}

func benchScreenshot(b *testing.B, v wire.View) {
	d := newDesktop(b)
	d.rec.Fill(b, 100, 100, 600, 300, color.RGBA{200, 120, 40, 255})
	d.client.SetView(v)
	ctx := context.Background()
	var size int
	for b.Loop() {
		shot, err := d.client.Screenshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		size = len(shot.PNG)
	}
	b.ReportMetric(float64(size), "png-bytes")
	// With -benchtime 1000x: the heap after 1,000 screenshots (agentd and
	// the client share this process), live objects only.
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MiB")
}

func BenchmarkE2EClickRoundTrip(b *testing.B) {
	d := newDesktop(b)
	ctx := context.Background()
	for b.Loop() {
		d.rec.Clear()
		if _, err := d.client.Click(ctx, 500, 400, actions.Left); err != nil {
			b.Fatal(err)
		}
		d.rec.WaitFor(b, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease }, 5*time.Second)
	}
}

func BenchmarkE2ETypeCharsPerSecond(b *testing.B) {
	d := newDesktop(b)
	ctx := context.Background()
	text := strings.Repeat("Hello, World! 0123456789 ", 20) // 500 chars
	var total time.Duration
	for b.Loop() {
		d.rec.Clear()
		start := time.Now()
		if _, err := d.client.Type(ctx, text); err != nil {
			b.Fatal(err)
		}
		d.rec.WaitTyped(b, text, 30*time.Second)
		total += time.Since(start)
	}
	b.ReportMetric(float64(len(text)*b.N)/total.Seconds(), "chars/s")
}
