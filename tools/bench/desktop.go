package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/internal/testimage"
	"github.com/agentd-dev/agentd/internal/xkeymap"
)

// The effect target's two colours: a click inside it swaps them, so every
// click changes the screen.
var (
	targetColor = color.RGBA{0, 96, 223, 255}
	flipColor   = color.RGBA{230, 120, 20, 255}
)

// desktop is the bench's deterministic desktop and its witness: one X client
// whose window covers the screen with a realistic, reproducible picture
// (panel, a browser-like window of text with a photo-like image, a
// terminal, an editor: internal/testimage) and records every key, button and
// motion event it receives with the time it saw it. A click inside target
// swaps the target's colour, so an action has a visible effect to wait for.
//
// The window is override-redirect and takes the input focus, so the window
// manager neither decorates nor moves it and keys go to it.
type desktop struct {
	size   Size
	target image.Rectangle

	conn   *xgb.Conn
	root   xproto.Window
	win    xproto.Window
	pix    xproto.Pixmap
	gc     xproto.Gcontext
	exited chan struct{}

	mu      sync.Mutex
	events  []xEvent
	changed chan struct{} // closed and replaced on every event
	keys    xkeymap.Map
	mapped  bool
	flipped bool
	err     error // the first X error
}

type eventKind int

const (
	keyPress eventKind = iota + 1
	keyRelease
	buttonPress
	buttonRelease
	motion
)

// xEvent is one event the desktop received.
type xEvent struct {
	kind   eventKind
	x, y   int  // root coordinates
	detail int  // button number, or keycode
	char   rune // the character a key press types, 0 if none
	seen   time.Time
}

// openDesktop connects to display with the cookie in xauthority, paints the
// desktop and returns once its window has the focus.
func openDesktop(display, xauthority string, size Size) (*desktop, error) {
	conn, err := dialDisplay(display, xauthority)
	if err != nil {
		return nil, err
	}
	d := &desktop{size: size, conn: conn, exited: make(chan struct{}), changed: make(chan struct{})}
	// Bottom right of the browser-like window's page, clear of its text.
	d.target = image.Rect(size.W*13/20-150, size.H*19/20-70, size.W*13/20-30, size.H*19/20-30)
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
// in xauthority, without the process environment: the guest's display is
// not ours.
func dialDisplay(display, xauthority string) (*xgb.Conn, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(display, ":"))
	if err != nil || !strings.HasPrefix(display, ":") {
		return nil, fmt.Errorf("desktop: display %q is not a local display number", display)
	}
	cookie, err := readCookie(xauthority)
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

// readCookie returns the first MIT-MAGIC-COOKIE-1 of an Xauthority file:
// entries of family, address, display number, name and data, each field
// but the family preceded by its big-endian 16-bit length.
func readCookie(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("xauthority: %w", err)
	}
	r := bytes.NewReader(data)
	for r.Len() > 0 {
		var family uint16
		if err := binary.Read(r, binary.BigEndian, &family); err != nil {
			return nil, fmt.Errorf("xauthority %s: %w", path, err)
		}
		var fields [4][]byte
		for i := range fields {
			var n uint16
			if err := binary.Read(r, binary.BigEndian, &n); err != nil {
				return nil, fmt.Errorf("xauthority %s: %w", path, err)
			}
			fields[i] = make([]byte, n)
			if _, err := io.ReadFull(r, fields[i]); err != nil {
				return nil, fmt.Errorf("xauthority %s: %w", path, err)
			}
		}
		if string(fields[2]) == "MIT-MAGIC-COOKIE-1" {
			return fields[3], nil
		}
	}
	return nil, fmt.Errorf("xauthority %s: no MIT-MAGIC-COOKIE-1", path)
}

// setUp paints the desktop into a pixmap and makes the window whose
// background it is: the server repaints exposures by itself.
func (d *desktop) setUp() error {
	setup := xproto.Setup(d.conn)
	scr := setup.DefaultScreen(d.conn)
	d.root = scr.Root
	if int(scr.WidthInPixels) != d.size.W || int(scr.HeightInPixels) != d.size.H {
		return fmt.Errorf("screen is %dx%d, want %v", scr.WidthInPixels, scr.HeightInPixels, d.size)
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
	if err := xproto.CreatePixmapChecked(d.conn, 24, d.pix, xproto.Drawable(d.root), uint16(d.size.W), uint16(d.size.H)).Check(); err != nil {
		return fmt.Errorf("create pixmap: %w", err)
	}
	if d.gc, err = xproto.NewGcontextId(d.conn); err != nil {
		return err
	}
	if err := xproto.CreateGCChecked(d.conn, d.gc, xproto.Drawable(d.pix), 0, nil).Check(); err != nil {
		return fmt.Errorf("create GC: %w", err)
	}
	img := testimage.Desktop(d.size.W, d.size.H)
	draw.Draw(img, d.target, image.NewUniform(targetColor), image.Point{}, draw.Src)
	if err := d.upload(img, int(setup.MaximumRequestLength)*4); err != nil {
		return err
	}
	if d.win, err = xproto.NewWindowId(d.conn); err != nil {
		return err
	}
	mask := uint32(xproto.EventMaskKeyPress | xproto.EventMaskKeyRelease | xproto.EventMaskButtonPress |
		xproto.EventMaskButtonRelease | xproto.EventMaskPointerMotion | xproto.EventMaskStructureNotify)
	err = xproto.CreateWindowChecked(d.conn, 24, d.win, d.root, 0, 0, uint16(d.size.W), uint16(d.size.H), 0,
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
	w := d.size.W
	rows := max(1, (maxRequest-64)/(w*4))
	buf := make([]byte, 0, rows*w*4)
	for y0 := 0; y0 < d.size.H; y0 += rows {
		y1 := min(y0+rows, d.size.H)
		buf = buf[:0]
		for y := y0; y < y1; y++ {
			row := img.Pix[y*img.Stride : y*img.Stride+w*4]
			for x := 0; x < len(row); x += 4 {
				buf = append(buf, row[x+2], row[x+1], row[x], 0) // BGRX
			}
		}
		err := xproto.PutImageChecked(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.pix), d.gc,
			uint16(w), uint16(y1-y0), 0, int16(y0), 0, 24, buf).Check()
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
	deadline := time.Now().Add(5 * time.Second)
	for !d.isMapped() {
		if time.Now().After(deadline) {
			return errors.New("window not mapped within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := xproto.SetInputFocusChecked(d.conn, xproto.InputFocusPointerRoot, d.win, xproto.TimeCurrentTime).Check(); err != nil {
		return fmt.Errorf("focus: %w", err)
	}
	return xproto.WarpPointerChecked(d.conn, 0, d.root, 0, 0, 0, 0, int16(d.size.W/2), int16(d.size.H/2)).Check()
}

func (d *desktop) isMapped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mapped
}

// close destroys the window and waits for the event loop to end.
func (d *desktop) close() {
	xproto.DestroyWindow(d.conn, d.win)
	xproto.FreePixmap(d.conn, d.pix)
	_, _ = xproto.GetInputFocus(d.conn).Reply() // flush before closing
	d.conn.Close()
	<-d.exited
}

// loop records events until the connection closes.
func (d *desktop) loop() {
	defer close(d.exited)
	for {
		ev, xerr := d.conn.WaitForEvent()
		if ev == nil && xerr == nil {
			return
		}
		if xerr != nil {
			d.fail(xerr)
			continue
		}
		d.handle(ev, time.Now())
	}
}

func (d *desktop) fail(err error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.mu.Unlock()
}

func (d *desktop) handle(ev xgb.Event, seen time.Time) {
	switch ev := ev.(type) {
	case xproto.KeyPressEvent:
		d.mu.Lock()
		ch := d.keys.Rune(int(ev.Detail), ev.State)
		d.mu.Unlock()
		if ev.State&(xproto.ModMaskControl|xproto.ModMask1) != 0 {
			ch = 0 // a shortcut, not text
		}
		d.add(xEvent{kind: keyPress, x: int(ev.RootX), y: int(ev.RootY), detail: int(ev.Detail), char: ch, seen: seen})
	case xproto.KeyReleaseEvent:
		d.add(xEvent{kind: keyRelease, x: int(ev.RootX), y: int(ev.RootY), detail: int(ev.Detail), seen: seen})
	case xproto.ButtonPressEvent:
		if image.Pt(int(ev.RootX), int(ev.RootY)).In(d.target) && ev.Detail == 1 {
			d.flip()
		}
		d.add(xEvent{kind: buttonPress, x: int(ev.RootX), y: int(ev.RootY), detail: int(ev.Detail), seen: seen})
	case xproto.ButtonReleaseEvent:
		d.add(xEvent{kind: buttonRelease, x: int(ev.RootX), y: int(ev.RootY), detail: int(ev.Detail), seen: seen})
	case xproto.MotionNotifyEvent:
		d.add(xEvent{kind: motion, x: int(ev.RootX), y: int(ev.RootY), seen: seen})
	case xproto.MappingNotifyEvent:
		// Input drivers bind characters the layout lacks to spare keycodes;
		// read the new map before the key events that follow.
		if ev.Request == xproto.MappingKeyboard {
			if err := d.loadKeys(); err != nil {
				d.fail(err)
			}
		}
	case xproto.MapNotifyEvent:
		d.mu.Lock()
		d.mapped = true
		d.mu.Unlock()
	}
}

// flip swaps the target's colour in the background pixmap and has the
// server repaint it.
func (d *desktop) flip() {
	d.mu.Lock()
	d.flipped = !d.flipped
	c := targetColor
	if d.flipped {
		c = flipColor
	}
	d.mu.Unlock()
	r := d.target
	xproto.ChangeGC(d.conn, d.gc, xproto.GcForeground, []uint32{uint32(c.R)<<16 | uint32(c.G)<<8 | uint32(c.B)})
	xproto.PolyFillRectangle(d.conn, xproto.Drawable(d.pix), d.gc,
		[]xproto.Rectangle{{X: int16(r.Min.X), Y: int16(r.Min.Y), Width: uint16(r.Dx()), Height: uint16(r.Dy())}})
	xproto.ClearArea(d.conn, false, d.win, int16(r.Min.X), int16(r.Min.Y), uint16(r.Dx()), uint16(r.Dy()))
}

// change flips the target and returns once the server has drawn it: the
// screen is not the one agentd saw last.
func (d *desktop) change() error {
	d.flip()
	if _, err := xproto.GetInputFocus(d.conn).Reply(); err != nil {
		return fmt.Errorf("desktop: %w", err)
	}
	return nil
}

// shownTargetColor is the colour the target has after the clicks so far.
func (d *desktop) shownTargetColor() color.RGBA {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flipped {
		return flipColor
	}
	return targetColor
}

func (d *desktop) add(e xEvent) {
	d.mu.Lock()
	d.events = append(d.events, e)
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// mark is the position of the next event, for waitFor and typed.
func (d *desktop) mark() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.events)
}

// reset forgets the events so far.
func (d *desktop) reset() {
	d.mu.Lock()
	d.events = nil
	d.mu.Unlock()
}

// waitFor waits until an event from position from on satisfies ok, and
// returns it.
func (d *desktop) waitFor(ctx context.Context, from int, timeout time.Duration, what string, ok func(xEvent) bool) (xEvent, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		d.mu.Lock()
		for i := from; i < len(d.events); i++ {
			if ok(d.events[i]) {
				e := d.events[i]
				d.mu.Unlock()
				return e, nil
			}
		}
		from = max(from, len(d.events))
		changed, xerr := d.changed, d.err
		d.mu.Unlock()
		if xerr != nil {
			return xEvent{}, fmt.Errorf("desktop: X error: %v", xerr)
		}
		select {
		case <-changed:
		case <-timer.C:
			return xEvent{}, fmt.Errorf("desktop: no %s within %v", what, timeout)
		case <-ctx.Done():
			return xEvent{}, ctx.Err()
		}
	}
}

// waitTyped waits until n characters were typed from event position from
// on, or timeout passed, and returns the text and when its last character
// arrived. Characters that never came are a result, not an error.
func (d *desktop) waitTyped(ctx context.Context, from, n int, timeout time.Duration) (string, time.Time, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		d.mu.Lock()
		var b strings.Builder
		var last time.Time
		count := 0
		for _, e := range d.events[min(from, len(d.events)):] {
			if e.kind == keyPress && e.char != 0 {
				b.WriteRune(e.char)
				last = e.seen
				count++
			}
		}
		changed := d.changed
		d.mu.Unlock()
		if count >= n {
			return b.String(), last, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return b.String(), last, nil
		case <-ctx.Done():
			return "", time.Time{}, ctx.Err()
		}
	}
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
