package xrecorder

import (
	"image/color"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

// driver sends XTEST input from a second pure-Go connection, so the recorder
// is tested independently of the input driver it is meant to check.
type driver struct {
	tb   testing.TB
	conn *xgb.Conn
	root xproto.Window
}

func newDriver(tb testing.TB, display string) *driver {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Close)
	if err := xtest.Init(conn); err != nil {
		tb.Fatal(err)
	}
	return &driver{tb: tb, conn: conn, root: xproto.Setup(conn).DefaultScreen(conn).Root}
}

func (d *driver) send(typ byte, detail byte, x, y int16) {
	d.tb.Helper()
	if err := xtest.FakeInputChecked(d.conn, typ, detail, 0, d.root, x, y, 0).Check(); err != nil {
		d.tb.Fatal(err)
	}
}

func TestRecorder(t *testing.T) {
	x := xvfbtest.Start(t, 320, 240)
	r := Start(t, x.Display)
	d := newDriver(t, x.Display)
	if r.Width != 320 || r.Height != 240 {
		t.Errorf("size %dx%d, want 320x240", r.Width, r.Height)
	}

	// Keycodes of Xvfb's default (us) layout: 50 Shift_L, 38 a, 36 Return.
	d.send(xproto.KeyPress, 50, 0, 0)
	d.send(xproto.KeyPress, 38, 0, 0)
	d.send(xproto.KeyRelease, 38, 0, 0)
	d.send(xproto.KeyRelease, 50, 0, 0)
	d.send(xproto.KeyPress, 38, 0, 0)
	d.send(xproto.KeyRelease, 38, 0, 0)
	d.send(xproto.KeyPress, 36, 0, 0)
	d.send(xproto.KeyRelease, 36, 0, 0)
	r.WaitTyped(t, "Aa\n", 5*time.Second)
	a := r.WaitFor(t, func(e Event) bool { return e.Kind == KeyPress && e.Keycode == 38 }, 0)
	if a.Keysym != 'A' || a.State&ShiftMask == 0 || a.Time == 0 {
		t.Errorf("shifted a: %v", a)
	}

	r.Sync(t) // the Return release may still be on its way
	r.Clear()
	d.send(xproto.MotionNotify, 0, 100, 50)
	d.send(xproto.ButtonPress, 3, 0, 0)
	keys, mask := r.Down(t)
	if len(keys) != 0 || mask&Button3Mask == 0 {
		t.Errorf("down: keys %v mask 0x%x, want button 3 only", keys, mask)
	}
	d.send(xproto.ButtonRelease, 3, 0, 0)
	rel := r.WaitFor(t, func(e Event) bool { return e.Kind == ButtonRelease }, 5*time.Second)
	if rel.Button != 3 || rel.X != 100 || rel.Y != 50 || rel.State&Button3Mask == 0 {
		t.Errorf("release %v, want button 3 at 100,50 with button 3 down before", rel)
	}
	evs := r.Events()
	if evs[0].Kind != Motion || evs[0].X != 100 || evs[0].Y != 50 {
		t.Errorf("first event %v, want motion to 100,50", evs[0])
	}

	r.Clear()
	r.Sync(t)
	if evs := r.Events(); len(evs) != 0 {
		t.Errorf("events %v after Clear and Sync, want none", evs)
	}
	if got := Typed([]Event{{Kind: KeyPress, Char: 'x', State: ControlMask}, {Kind: KeyRelease, Char: 'y'}}); got != "" {
		t.Errorf("Typed of a shortcut and a release = %q, want empty", got)
	}

	r.Fill(t, 10, 20, 5, 5, color.RGBA{R: 0x12, G: 0x34, B: 0x56, A: 0xff})
	img, err := xproto.GetImage(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.root), 12, 22, 1, 1, 0xffffffff).Reply()
	if err != nil {
		t.Fatal(err)
	}
	// ZPixmap at depth 24 is B, G, R, pad on a little-endian server.
	if got := [3]byte{img.Data[2], img.Data[1], img.Data[0]}; got != [3]byte{0x12, 0x34, 0x56} {
		t.Errorf("filled pixel %x, want 123456", got)
	}
	if err := r.Err(); err != nil {
		t.Errorf("X error: %v", err)
	}
}
