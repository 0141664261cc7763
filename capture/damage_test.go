//go:build linux

package capture

import (
	"bytes"
	"context"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

// rootPixels reads the screen with a plain GetImage on conn, as RGBA: what
// a capture must return.
func rootPixels(t *testing.T, conn *xgb.Conn, root xproto.Window, w, h int) []byte {
	t.Helper()
	r, err := xproto.GetImage(conn, xproto.ImageFormatZPixmap, xproto.Drawable(root), 0, 0, uint16(w), uint16(h), 0xffffffff).Reply()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, w*h*4)
	bgrxToRGBA(out, r.Data[:w*h*4])
	return out
}

// TestUnchangedScreenReused checks both sides of the DAMAGE shortcut: a
// capture of a screen nobody drew on returns the same frame (same buffer,
// same version), and after each way a desktop changes (drawing into a
// window, a window mapped, moved, repainted from its background, unmapped,
// a point drawn on the root) the capture has exactly the server's pixels.
func TestUnchangedScreenReused(t *testing.T) {
	for _, m := range []Method{MethodSHM, MethodGetImage} {
		t.Run(string(m), func(t *testing.T) {
			srv := xvfbtest.Start(t, testW, testH)
			paint(t, srv.Display)
			c := open(t, srv.Display, m)
			if c.x.damage == 0 {
				t.Fatal("the X server offers no DAMAGE extension")
			}
			conn, err := xgb.NewConnDisplay(srv.Display)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			scr := xproto.Setup(conn).DefaultScreen(conn)
			root := scr.Root
			ctx := context.Background()

			first, err := c.Capture(ctx)
			if err != nil {
				t.Fatal(err)
			}
			v := c.FrameVersion()
			h, _ := c.FrameHash(ctx)
			for range 3 {
				img, err := c.Capture(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if img != first || c.FrameVersion() != v {
					t.Fatal("a still screen was read again (or its version changed)")
				}
			}
			if h2, _ := c.FrameHash(ctx); h2 != h {
				t.Fatal("hash changed on a still screen")
			}
			checkPattern(t, first, testW, testH)

			win, _ := xproto.NewWindowId(conn)
			gc, _ := xproto.NewGcontextId(conn)
			changes := []struct {
				name string
				do   func()
			}{
				{"map a window", func() {
					xproto.CreateWindow(conn, 0, win, root, 40, 30, 120, 90, 0, xproto.WindowClassInputOutput, scr.RootVisual,
						xproto.CwBackPixel|xproto.CwOverrideRedirect, []uint32{0x336699, 1})
					xproto.MapWindow(conn, win)
				}},
				{"draw into it", func() {
					xproto.CreateGC(conn, gc, xproto.Drawable(win), xproto.GcForeground, []uint32{0xff8000})
					xproto.PolyFillRectangle(conn, xproto.Drawable(win), gc, []xproto.Rectangle{{X: 5, Y: 7, Width: 11, Height: 3}})
				}},
				{"move it", func() {
					xproto.ConfigureWindow(conn, win, xproto.ConfigWindowX|xproto.ConfigWindowY, []uint32{200, 150})
				}},
				{"repaint it from its background", func() { xproto.ClearArea(conn, false, win, 0, 0, 0, 0) }},
				{"unmap it", func() { xproto.UnmapWindow(conn, win) }},
				{"draw a point on the root", func() {
					g, _ := xproto.NewGcontextId(conn)
					xproto.CreateGC(conn, g, xproto.Drawable(root), xproto.GcForeground|xproto.GcSubwindowMode,
						[]uint32{0xffffff, xproto.SubwindowModeIncludeInferiors})
					xproto.PolyPoint(conn, xproto.CoordModeOrigin, xproto.Drawable(root), g, []xproto.Point{{X: 161, Y: 99}})
				}},
			}
			for _, ch := range changes {
				ch.do()
				want := rootPixels(t, conn, root, testW, testH) // also a round trip: the change is done
				img, err := c.Capture(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(img.Pix, want) {
					t.Fatalf("%s: the capture is not the screen", ch.name)
				}
				if c.FrameVersion() == v {
					t.Fatalf("%s: the version did not change", ch.name)
				}
				v = c.FrameVersion()
			}
		})
	}
}
