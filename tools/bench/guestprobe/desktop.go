package guestprobe

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/internal/testimage"
	"github.com/agentd-dev/agentd/internal/xauth"
	"github.com/agentd-dev/agentd/internal/xkeymap"
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// desktop is the bench's deterministic desktop and its witness (see
// probe.DesktopMode): the picture is internal/testimage's (panel, a
// browser-like window of text with a photo-like image, a terminal, an
// editor), and a click inside the target swaps the target's colour, so an
// action has a visible effect to wait for.
//
// The window is override-redirect and takes the input focus, so the window
// manager neither decorates nor moves it and keys go to it.
type desktop struct {
	w, h   int
	target image.Rectangle

	conn   *xgb.Conn
	root   xproto.Window
	win    xproto.Window
	pix    xproto.Pixmap
	gc     xproto.Gcontext
	exited chan struct{}
	mapped chan struct{} // closed at the window's MapNotify

	mu      sync.Mutex
	enc     *json.Encoder // every line out, under mu
	keys    xkeymap.Map
	flipped bool
}

// ServeDesktop runs the desktop (probe.DesktopMode; args are the screen's
// width and height) on display, reached with the cookie in xauthority, until
// in ends.
func ServeDesktop(ctx context.Context, display, xauthority string, args []string, in io.Reader, out io.Writer) error {
	if len(args) != 2 {
		return fmt.Errorf("desktop: want WIDTH HEIGHT, got %q", args)
	}
	w, errW := strconv.Atoi(args[0])
	h, errH := strconv.Atoi(args[1])
	if errW != nil || errH != nil {
		return fmt.Errorf("desktop: want WIDTH HEIGHT, got %q", args)
	}
	enc := json.NewEncoder(out)
	d, err := openDesktop(display, xauthority, w, h, enc)
	if err != nil {
		_ = enc.Encode(probe.DesktopMsg{Err: err.Error()})
		return err
	}
	defer d.close()
	d.send(probe.DesktopMsg{Target: &d.target})
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sc.Text() != probe.ChangeLine {
			return fmt.Errorf("desktop: unknown request %q", sc.Text())
		}
		if err := d.change(); err != nil {
			d.send(probe.DesktopMsg{Err: err.Error()})
			continue
		}
		d.send(probe.DesktopMsg{Changed: true})
	}
	return sc.Err()
}

// openDesktop connects to display, paints the desktop and returns once its
// window has the focus.
func openDesktop(display, xauthority string, w, h int, enc *json.Encoder) (*desktop, error) {
	conn, err := dialDisplay(display, xauthority)
	if err != nil {
		return nil, err
	}
	d := &desktop{w: w, h: h, conn: conn, enc: enc, exited: make(chan struct{}), mapped: make(chan struct{})}
	// Bottom right of the browser-like window's page, clear of its text.
	d.target = image.Rect(w*13/20-150, h*19/20-70, w*13/20-30, h*19/20-30)
	if err := d.setUp(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("desktop: %w", err)
	}
	go d.loop()
	if err := d.show(); err != nil {
		d.close()
		return nil, fmt.Errorf("desktop: %w", err)
	}
	return d, nil
}

// dialDisplay connects to a local display (":N") with the MIT-MAGIC-COOKIE-1
// in xauthority, over the display's unix socket.
func dialDisplay(display, xauthority string) (*xgb.Conn, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(display, ":"))
	if err != nil || !strings.HasPrefix(display, ":") {
		return nil, fmt.Errorf("desktop: display %q is not a local display number", display)
	}
	cookie, err := xauth.Cookie(xauthority)
	if err != nil {
		return nil, fmt.Errorf("desktop: %w", err)
	}
	nc, err := net.DialTimeout("unix", filepath.Join("/tmp/.X11-unix", "X"+strconv.Itoa(n)), 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("desktop: connect to %s: %w", display, err)
	}
	conn, err := xgb.NewConnNetWithCookieHex(nc, hex.EncodeToString(cookie))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("desktop: connect to %s: %w", display, err)
	}
	return conn, nil
}

// setUp paints the desktop into a pixmap and makes the window whose
// background it is: the server repaints exposures by itself.
func (d *desktop) setUp() error {
	setup := xproto.Setup(d.conn)
	scr := setup.DefaultScreen(d.conn)
	d.root = scr.Root
	if int(scr.WidthInPixels) != d.w || int(scr.HeightInPixels) != d.h {
		return fmt.Errorf("screen is %dx%d, want %dx%d", scr.WidthInPixels, scr.HeightInPixels, d.w, d.h)
	}
	if scr.RootDepth != 24 || setup.ImageByteOrder != xproto.ImageOrderLSBFirst {
		return fmt.Errorf("needs a 24-bit little-endian screen (depth %d)", scr.RootDepth)
	}
	if err := d.loadKeys(); err != nil {
		return err
	}
	var err error
	if d.pix, err = xproto.NewPixmapId(d.conn); err != nil {
		return err
	}
	if err := xproto.CreatePixmapChecked(d.conn, 24, d.pix, xproto.Drawable(d.root), uint16(d.w), uint16(d.h)).Check(); err != nil {
		return fmt.Errorf("create pixmap: %w", err)
	}
	if d.gc, err = xproto.NewGcontextId(d.conn); err != nil {
		return err
	}
	if err := xproto.CreateGCChecked(d.conn, d.gc, xproto.Drawable(d.pix), 0, nil).Check(); err != nil {
		return fmt.Errorf("create GC: %w", err)
	}
	img := testimage.Desktop(d.w, d.h)
	draw.Draw(img, d.target, image.NewUniform(probe.TargetColor), image.Point{}, draw.Src)
	if err := d.upload(img, int(setup.MaximumRequestLength)*4); err != nil {
		return err
	}
	if d.win, err = xproto.NewWindowId(d.conn); err != nil {
		return err
	}
	mask := uint32(xproto.EventMaskKeyPress | xproto.EventMaskKeyRelease | xproto.EventMaskButtonPress |
		xproto.EventMaskButtonRelease | xproto.EventMaskPointerMotion | xproto.EventMaskStructureNotify)
	err = xproto.CreateWindowChecked(d.conn, 24, d.win, d.root, 0, 0, uint16(d.w), uint16(d.h), 0,
		xproto.WindowClassInputOutput, scr.RootVisual,
		xproto.CwBackPixmap|xproto.CwOverrideRedirect|xproto.CwEventMask,
		[]uint32{uint32(d.pix), 1, mask}).Check()
	if err != nil {
		return fmt.Errorf("create window: %w", err)
	}
	return nil
}

// upload sends img to the pixmap in strips that fit in one request.
func (d *desktop) upload(img *image.RGBA, maxRequest int) error {
	rows := max(1, (maxRequest-64)/(d.w*4))
	buf := make([]byte, 0, rows*d.w*4)
	for y0 := 0; y0 < d.h; y0 += rows {
		y1 := min(y0+rows, d.h)
		buf = buf[:0]
		for y := y0; y < y1; y++ {
			row := img.Pix[y*img.Stride : y*img.Stride+d.w*4]
			for x := 0; x < len(row); x += 4 {
				buf = append(buf, row[x+2], row[x+1], row[x], 0) // BGRX
			}
		}
		err := xproto.PutImageChecked(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.pix), d.gc,
			uint16(d.w), uint16(y1-y0), 0, int16(y0), 0, 24, buf).Check()
		if err != nil {
			return fmt.Errorf("put image: %w", err)
		}
	}
	return nil
}

// show maps the window, waits until it is viewable, gives it the focus and
// puts the pointer in the middle of the screen.
func (d *desktop) show() error {
	if err := xproto.MapWindowChecked(d.conn, d.win).Check(); err != nil {
		return fmt.Errorf("map window: %w", err)
	}
	select {
	case <-d.mapped:
	case <-d.exited:
		return errors.New("the display closed the connection")
	case <-time.After(5 * time.Second):
		return errors.New("window not mapped within 5s")
	}
	if err := xproto.SetInputFocusChecked(d.conn, xproto.InputFocusPointerRoot, d.win, xproto.TimeCurrentTime).Check(); err != nil {
		return fmt.Errorf("focus: %w", err)
	}
	return xproto.WarpPointerChecked(d.conn, 0, d.root, 0, 0, 0, 0, int16(d.w/2), int16(d.h/2)).Check()
}

// close destroys the window and waits for the event loop to end.
func (d *desktop) close() {
	xproto.DestroyWindow(d.conn, d.win)
	xproto.FreePixmap(d.conn, d.pix)
	_, _ = xproto.GetInputFocus(d.conn).Reply() // flush before closing
	d.conn.Close()
	<-d.exited
}

// loop reports events until the connection closes.
func (d *desktop) loop() {
	defer close(d.exited)
	for {
		ev, xerr := d.conn.WaitForEvent()
		if ev == nil && xerr == nil {
			return
		}
		if xerr != nil {
			d.send(probe.DesktopMsg{Err: "X error: " + xerr.Error()})
			continue
		}
		d.handle(ev, time.Now())
	}
}

// send writes m with the target's state; a write error means the bench
// is gone, and the end of stdin follows.
func (d *desktop) send(m probe.DesktopMsg) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m.Flipped = d.flipped
	_ = d.enc.Encode(m)
}

func (d *desktop) handle(ev xgb.Event, seen time.Time) {
	event := func(kind string, x, y int16, detail int, char rune) {
		d.send(probe.DesktopMsg{Event: &probe.Event{Kind: kind, X: int(x), Y: int(y), Detail: detail, Char: char, Seen: seen.UnixNano()}})
	}
	switch ev := ev.(type) {
	case xproto.KeyPressEvent:
		d.mu.Lock()
		ch := d.keys.Rune(int(ev.Detail), ev.State)
		d.mu.Unlock()
		if ev.State&(xproto.ModMaskControl|xproto.ModMask1) != 0 {
			ch = 0 // a shortcut, not text
		}
		event(probe.KeyPress, ev.RootX, ev.RootY, int(ev.Detail), ch)
	case xproto.KeyReleaseEvent:
		event(probe.KeyRelease, ev.RootX, ev.RootY, int(ev.Detail), 0)
	case xproto.ButtonPressEvent:
		if image.Pt(int(ev.RootX), int(ev.RootY)).In(d.target) && ev.Detail == 1 {
			d.flip()
		}
		event(probe.ButtonPress, ev.RootX, ev.RootY, int(ev.Detail), 0)
	case xproto.ButtonReleaseEvent:
		event(probe.ButtonRelease, ev.RootX, ev.RootY, int(ev.Detail), 0)
	case xproto.MotionNotifyEvent:
		event(probe.Motion, ev.RootX, ev.RootY, 0, 0)
	case xproto.MappingNotifyEvent:
		// Input drivers bind characters the layout lacks to spare keycodes;
		// read the new map before the key events that follow.
		if ev.Request == xproto.MappingKeyboard {
			if err := d.loadKeys(); err != nil {
				d.send(probe.DesktopMsg{Err: err.Error()})
			}
		}
	case xproto.MapNotifyEvent:
		select {
		case <-d.mapped:
		default:
			close(d.mapped)
		}
	}
}

// flip swaps the target's colour in the background pixmap and has the
// server repaint it.
func (d *desktop) flip() {
	d.mu.Lock()
	d.flipped = !d.flipped
	c := probe.TargetColor
	if d.flipped {
		c = probe.FlipColor
	}
	d.mu.Unlock()
	r := d.target
	xproto.ChangeGC(d.conn, d.gc, xproto.GcForeground, []uint32{uint32(c.R)<<16 | uint32(c.G)<<8 | uint32(c.B)})
	xproto.PolyFillRectangle(d.conn, xproto.Drawable(d.pix), d.gc,
		[]xproto.Rectangle{{X: int16(r.Min.X), Y: int16(r.Min.Y), Width: uint16(r.Dx()), Height: uint16(r.Dy())}})
	xproto.ClearArea(d.conn, false, d.win, int16(r.Min.X), int16(r.Min.Y), uint16(r.Dx()), uint16(r.Dy()))
}

// change flips the target and returns once the server has drawn it.
func (d *desktop) change() error {
	d.flip()
	if _, err := xproto.GetInputFocus(d.conn).Reply(); err != nil {
		return fmt.Errorf("desktop: %w", err)
	}
	return nil
}

func (d *desktop) loadKeys() error {
	keys, err := xkeymap.Load(d.conn)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.keys = keys
	d.mu.Unlock()
	return nil
}
