//go:build linux

package render

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/capture"
	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/scaling"
)

// painter draws on a display through its own connection: a window over the
// whole screen and rectangles in it.
type painter struct {
	conn *xgb.Conn
	win  xproto.Window
	gc   xproto.Gcontext
}

func newPainter(tb testing.TB, display string, w, h int) *painter {
	tb.Helper()
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Close)
	scr := xproto.Setup(conn).DefaultScreen(conn)
	p := &painter{conn: conn}
	p.win, _ = xproto.NewWindowId(conn)
	p.gc, _ = xproto.NewGcontextId(conn)
	err = xproto.CreateWindowChecked(conn, 0, p.win, scr.Root, 0, 0, uint16(w), uint16(h), 0,
		xproto.WindowClassInputOutput, scr.RootVisual, xproto.CwBackPixel|xproto.CwOverrideRedirect,
		[]uint32{0x204060, 1}).Check()
	if err != nil {
		tb.Fatal(err)
	}
	xproto.MapWindow(conn, p.win)
	xproto.CreateGC(conn, p.gc, xproto.Drawable(p.win), 0, nil)
	for i := range 40 { // some content
		p.fill(tb, uint32(i)*0x051f3b, i*17%w, i*29%h, 40, 12)
	}
	return p
}

// fill draws a rectangle and returns once the server has.
func (p *painter) fill(tb testing.TB, rgb uint32, x, y, w, h int) {
	tb.Helper()
	xproto.ChangeGC(p.conn, p.gc, xproto.GcForeground, []uint32{rgb})
	xproto.PolyFillRectangle(p.conn, xproto.Drawable(p.win), p.gc,
		[]xproto.Rectangle{{X: int16(x), Y: int16(y), Width: uint16(w), Height: uint16(h)}})
	if _, err := xproto.GetInputFocus(p.conn).Reply(); err != nil {
		tb.Fatal(err)
	}
}

// TestScreenshotsOfARealScreen: through a Capturer and a Renderer as agentd
// uses them, every screenshot is the screen as it is, whether it changed or
// not, in every view.
func TestScreenshotsOfARealScreen(t *testing.T) {
	const w, h = 320, 200
	srv := xvfbtest.Start(t, w, h)
	p := newPainter(t, srv.Display, w, h)
	c, err := capture.Open(srv.Display, capture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := &Renderer{Frames: c}
	native, small := view(t, 0, 0), view(t, 160, 100)
	ctx := context.Background()
	shot := func(tr scaling.Transform) []byte {
		t.Helper()
		img, err := c.Capture(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		var fresh Renderer
		if err := fresh.Render(&want, img, tr); err != nil {
			t.Fatal(err)
		}
		if err := r.Render(&got, img, tr); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("the screenshot of %+v is not the screen's", tr.Image)
		}
		return got.Bytes()
	}
	before := shot(native)
	if again := shot(native); !bytes.Equal(again, before) {
		t.Fatal("a still screen gave another PNG")
	}
	shot(small)
	p.fill(t, 0xffffff, 100, 100, 1, 1)
	shot(small)
	if after := shot(native); bytes.Equal(after, before) {
		t.Fatal("a changed pixel gave the same PNG")
	}
}

// BenchmarkScreenshot is agentd's whole path for one screenshot: capture
// 1440×900, fit into 1280×800, encode; "changed" after a change on the
// screen, "unchanged" of the same screen as the screenshot before.
func BenchmarkScreenshot(b *testing.B) {
	const w, h = 1440, 900
	srv := xvfbtest.Start(b, w, h)
	p := newPainter(b, srv.Display, w, h)
	c, err := capture.Open(srv.Display, capture.Options{Method: capture.MethodSHM})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	t, err := scaling.New(scaling.Size{W: w, H: h}, nil, 1280, 800, true)
	if err != nil {
		b.Fatal(err)
	}
	for _, changed := range []bool{true, false} {
		name := "unchanged"
		if changed {
			name = "changed"
		}
		b.Run(name, func(b *testing.B) {
			r := &Renderer{Frames: c}
			ctx := context.Background()
			colour := uint32(0)
			cputime.Loop(b, func() error {
				if changed {
					b.StopTimer()
					colour ^= 0xffffff
					p.fill(b, colour, 700, 400, 30, 20)
					b.StartTimer()
				}
				img, err := c.Capture(ctx)
				if err != nil {
					return err
				}
				return r.Render(io.Discard, img, t)
			})
		})
	}
}
