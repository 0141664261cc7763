// Package xrecorder is a real X client for tests: a window covering the whole
// screen that records every key, button and motion event it receives, with
// the server's timestamps, so a test can check what an input driver really
// delivered (positions, modifier state, buttons, keysyms and typed text).
//
// It is pure Go (github.com/jezek/xgb), so it needs no cgo. The window is
// override-redirect, so no window manager is needed, and it takes the input
// focus when it starts.
package xrecorder

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/xkeymap"
	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// init keeps xgb from logging, for every connection to a test Xvfb, that
// there is no Xauthority file (Xvfb needs none): the lines land in the middle
// of benchmark results. It runs in init, before any connection exists, so
// the write cannot race with xgb's goroutines; xrecorder is imported only by
// tests.
func init() {
	xgb.Logger = log.New(dropAuthNotes{os.Stderr}, "XGB: ", log.Lshortfile)
}

type dropAuthNotes struct{ w io.Writer }

func (d dropAuthNotes) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("authority info")) {
		return len(p), nil
	}
	return d.w.Write(p)
}

// Kind is the kind of a recorded event.
type Kind int

// The recorded kinds.
const (
	KeyPress Kind = iota + 1
	KeyRelease
	ButtonPress
	ButtonRelease
	Motion
	// MappingChange is a MappingNotify for the keyboard: someone changed
	// the keyboard mapping (input drivers do, to type characters the
	// layout lacks).
	MappingChange
)

func (k Kind) String() string {
	switch k {
	case KeyPress:
		return "KeyPress"
	case KeyRelease:
		return "KeyRelease"
	case ButtonPress:
		return "ButtonPress"
	case ButtonRelease:
		return "ButtonRelease"
	case Motion:
		return "Motion"
	case MappingChange:
		return "MappingChange"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Bits of Event.State: the modifiers and buttons down just before the event.
const (
	ShiftMask   = xproto.ModMaskShift
	LockMask    = xproto.ModMaskLock
	ControlMask = xproto.ModMaskControl
	Mod1Mask    = xproto.ModMask1 // Alt
	Mod4Mask    = xproto.ModMask4 // Super
	Button1Mask = xproto.ButtonMask1
	Button2Mask = xproto.ButtonMask2
	Button3Mask = xproto.ButtonMask3
)

// Event is one recorded event.
type Event struct {
	Kind Kind
	// Time is the server timestamp in milliseconds (0 for MappingChange).
	Time uint32
	// X and Y are the pointer's root (screen) coordinates.
	X, Y int
	// State is the modifier and button mask before the event.
	State uint16
	// Button is the X button number of button events (1..9).
	Button int
	// Keycode and Keysym are set for key events. Keysym is looked up in the
	// keyboard mapping as it was when the event was read, honouring Shift
	// and Caps Lock.
	Keycode int
	Keysym  uint32
	// Char is the character a KeyPress types ('\n' for Return, '\t' for
	// Tab), 0 if none.
	Char rune
}

func (e Event) String() string {
	switch e.Kind {
	case KeyPress, KeyRelease:
		return fmt.Sprintf("%s(code %d sym 0x%x %q state 0x%x t=%d)", e.Kind, e.Keycode, e.Keysym, e.Char, e.State, e.Time)
	case ButtonPress, ButtonRelease:
		return fmt.Sprintf("%s(%d at %d,%d state 0x%x t=%d)", e.Kind, e.Button, e.X, e.Y, e.State, e.Time)
	case Motion:
		return fmt.Sprintf("Motion(%d,%d state 0x%x t=%d)", e.X, e.Y, e.State, e.Time)
	}
	return e.Kind.String()
}

// Recorder is a running recorder window.
type Recorder struct {
	// Width and Height are the screen's (and the window's) size.
	Width, Height int

	conn   *xgb.Conn
	win    xproto.Window
	gc     xproto.Gcontext
	exited chan struct{}

	mu       sync.Mutex
	events   []Event
	changed  chan struct{} // closed and replaced on every new event
	keys     xkeymap.Map
	fills    []fill
	mapped   bool
	syncSent uint32
	syncSeen uint32
	err      error // the first X error seen
}

type fill struct {
	r     xproto.Rectangle
	pixel uint32
}

// Start opens display, maps the recorder window over the whole screen, gives
// it the input focus and returns once it receives events. It is closed when
// tb ends.
func Start(tb testing.TB, display string) *Recorder {
	tb.Helper()
	r, err := start(display)
	if err != nil {
		tb.Fatalf("xrecorder: %v", err)
	}
	tb.Cleanup(r.close)
	return r
}

func start(display string) (*Recorder, error) {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("connect to %q: %w", display, err)
	}
	setup := xproto.Setup(conn)
	screen := setup.DefaultScreen(conn)
	r := &Recorder{
		Width:   int(screen.WidthInPixels),
		Height:  int(screen.HeightInPixels),
		conn:    conn,
		exited:  make(chan struct{}),
		changed: make(chan struct{}),
	}
	fail := func(err error) (*Recorder, error) {
		conn.Close()
		return nil, err
	}
	if err := r.loadKeymap(); err != nil {
		return fail(err)
	}
	if r.win, err = xproto.NewWindowId(conn); err != nil {
		return fail(err)
	}
	mask := uint32(xproto.EventMaskKeyPress | xproto.EventMaskKeyRelease |
		xproto.EventMaskButtonPress | xproto.EventMaskButtonRelease |
		xproto.EventMaskPointerMotion | xproto.EventMaskExposure | xproto.EventMaskStructureNotify)
	err = xproto.CreateWindowChecked(conn, screen.RootDepth, r.win, screen.Root, 0, 0,
		screen.WidthInPixels, screen.HeightInPixels, 0, xproto.WindowClassInputOutput, screen.RootVisual,
		xproto.CwBackPixel|xproto.CwOverrideRedirect|xproto.CwEventMask,
		[]uint32{screen.WhitePixel, 1, mask}).Check()
	if err != nil {
		return fail(fmt.Errorf("create window: %w", err))
	}
	if r.gc, err = xproto.NewGcontextId(conn); err != nil {
		return fail(err)
	}
	if err := xproto.CreateGCChecked(conn, r.gc, xproto.Drawable(r.win), 0, nil).Check(); err != nil {
		return fail(fmt.Errorf("create GC: %w", err))
	}
	go r.loop()
	if err := xproto.MapWindowChecked(conn, r.win).Check(); err != nil {
		r.close()
		return nil, fmt.Errorf("map window: %w", err)
	}
	// Focus can only go to a viewable window: wait for MapNotify.
	deadline := time.Now().Add(5 * time.Second)
	for !r.isMapped() {
		if time.Now().After(deadline) {
			r.close()
			return nil, fmt.Errorf("window not mapped within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	xproto.SetInputFocus(conn, xproto.InputFocusPointerRoot, r.win, xproto.TimeCurrentTime)
	if err := r.sync(5 * time.Second); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *Recorder) isMapped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mapped
}

// close destroys the window and waits for the event loop to end.
func (r *Recorder) close() {
	xproto.DestroyWindow(r.conn, r.win)
	_, _ = xproto.GetInputFocus(r.conn).Reply() // flush the destroy
	r.conn.Close()
	<-r.exited
}

func (r *Recorder) loop() {
	defer close(r.exited)
	for {
		ev, xerr := r.conn.WaitForEvent()
		if ev == nil && xerr == nil {
			return // connection closed
		}
		if xerr != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = xerr
			}
			r.mu.Unlock()
			continue
		}
		r.handle(ev)
	}
}

func (r *Recorder) handle(ev xgb.Event) {
	switch ev := ev.(type) {
	case xproto.KeyPressEvent:
		r.addKey(KeyPress, ev.Time, ev.RootX, ev.RootY, ev.State, ev.Detail)
	case xproto.KeyReleaseEvent:
		r.addKey(KeyRelease, ev.Time, ev.RootX, ev.RootY, ev.State, ev.Detail)
	case xproto.ButtonPressEvent:
		r.add(Event{Kind: ButtonPress, Time: uint32(ev.Time), X: int(ev.RootX), Y: int(ev.RootY), State: ev.State, Button: int(ev.Detail)})
	case xproto.ButtonReleaseEvent:
		r.add(Event{Kind: ButtonRelease, Time: uint32(ev.Time), X: int(ev.RootX), Y: int(ev.RootY), State: ev.State, Button: int(ev.Detail)})
	case xproto.MotionNotifyEvent:
		r.add(Event{Kind: Motion, Time: uint32(ev.Time), X: int(ev.RootX), Y: int(ev.RootY), State: ev.State})
	case xproto.MappingNotifyEvent:
		if ev.Request == xproto.MappingKeyboard {
			// Read the new mapping before the key events that follow (xgb
			// buffers 5000 events meanwhile, so the round trip is safe).
			if err := r.loadKeymap(); err != nil {
				r.mu.Lock()
				if r.err == nil {
					r.err = err
				}
				r.mu.Unlock()
			}
			r.add(Event{Kind: MappingChange})
		}
	case xproto.MapNotifyEvent:
		r.mu.Lock()
		r.mapped = true
		r.mu.Unlock()
	case xproto.ExposeEvent:
		if ev.Count == 0 {
			r.repaint()
		}
	case xproto.ClientMessageEvent:
		r.mu.Lock()
		r.syncSeen = ev.Data.Data32[0]
		r.signal()
		r.mu.Unlock()
	}
}

func (r *Recorder) addKey(kind Kind, t xproto.Timestamp, x, y int16, state uint16, code xproto.Keycode) {
	r.mu.Lock()
	sym := r.keys.Keysym(int(code), state)
	r.mu.Unlock()
	e := Event{Kind: kind, Time: uint32(t), X: int(x), Y: int(y), State: state, Keycode: int(code), Keysym: sym}
	if kind == KeyPress {
		e.Char = xkeymap.KeysymRune(sym)
	}
	r.add(e)
}

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.signal()
	r.mu.Unlock()
}

// signal wakes waiters; r.mu is held.
func (r *Recorder) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Recorder) loadKeymap() error {
	keys, err := xkeymap.Load(r.conn)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.keys = keys
	r.mu.Unlock()
	return nil
}

// Events returns a copy of the events recorded since Start or Clear.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Clear forgets the recorded events.
func (r *Recorder) Clear() {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

// Err is the first X error the recorder's connection reported, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Typed returns the text typed by the recorded key presses. Presses with
// Control or Alt held are shortcuts, not text, and are left out.
func (r *Recorder) Typed() string { return Typed(r.Events()) }

// Typed returns the text typed by the key presses among evs (see
// Recorder.Typed).
func Typed(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Kind == KeyPress && e.Char != 0 && e.State&(ControlMask|Mod1Mask) == 0 {
			b.WriteRune(e.Char)
		}
	}
	return b.String()
}

// WaitFor waits up to timeout for a recorded event matching pred (one
// recorded earlier counts) and returns the first such event. It fails tb on
// timeout.
func (r *Recorder) WaitFor(tb testing.TB, pred func(Event) bool, timeout time.Duration) Event {
	tb.Helper()
	var found Event
	r.WaitUntil(tb, func(evs []Event) bool {
		for _, e := range evs {
			if pred(e) {
				found = e
				return true
			}
		}
		return false
	}, timeout)
	return found
}

// WaitUntil waits up to timeout until cond holds for the events recorded so
// far, and returns them. It fails tb on timeout, listing the events.
func (r *Recorder) WaitUntil(tb testing.TB, cond func([]Event) bool, timeout time.Duration) []Event {
	tb.Helper()
	evs, ok := r.Await(cond, timeout)
	if !ok {
		tb.Fatalf("xrecorder: condition not met within %v; %d events: %v", timeout, len(evs), evs)
	}
	return evs
}

// Await is WaitUntil for code that cannot fail a test (a server's hook on
// another goroutine): it reports whether cond held within timeout.
func (r *Recorder) Await(cond func([]Event) bool, timeout time.Duration) ([]Event, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		evs := append([]Event(nil), r.events...)
		changed := r.changed
		r.mu.Unlock()
		if cond(evs) {
			return evs, true
		}
		select {
		case <-changed:
		case <-timer.C:
			return evs, false
		}
	}
}

// WaitTyped waits until the recorded text is want and fails tb with both
// texts if it is not within timeout (or typing went past it).
func (r *Recorder) WaitTyped(tb testing.TB, want string, timeout time.Duration) {
	tb.Helper()
	evs, ok := r.Await(func(evs []Event) bool { return len(Typed(evs)) >= len(want) }, timeout)
	if got := Typed(evs); !ok || got != want {
		tb.Fatalf("xrecorder: typed %q, want %q", got, want)
	}
}

// Sync returns once every event the server generated before the call has
// been recorded, so a test can check that something did not happen.
func (r *Recorder) Sync(tb testing.TB) {
	tb.Helper()
	if err := r.sync(5 * time.Second); err != nil {
		tb.Fatalf("xrecorder: %v", err)
	}
}

// sync sends the window a ClientMessage and waits for it to come back: the
// server delivers events in order, so everything before it is in.
func (r *Recorder) sync(timeout time.Duration) error {
	r.mu.Lock()
	r.syncSent++
	n := r.syncSent
	r.mu.Unlock()
	msg := xproto.ClientMessageEvent{
		Format: 32, Window: r.win, Type: xproto.AtomString,
		Data: xproto.ClientMessageDataUnionData32New([]uint32{n, 0, 0, 0, 0}),
	}
	if err := xproto.SendEventChecked(r.conn, false, r.win, 0, string(msg.Bytes())).Check(); err != nil {
		return fmt.Errorf("send sync event: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		seen, changed := r.syncSeen, r.changed
		r.mu.Unlock()
		if seen >= n {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return fmt.Errorf("sync event not back within %v", timeout)
		}
	}
}

// Fill paints a rectangle of the window in c (a 24-bit TrueColor screen is
// assumed, as Xvfb's default is) and keeps it painted across exposures. It
// returns once the server has drawn it.
func (r *Recorder) Fill(tb testing.TB, x, y, w, h int, c color.RGBA) {
	tb.Helper()
	f := fill{
		r:     xproto.Rectangle{X: int16(x), Y: int16(y), Width: uint16(w), Height: uint16(h)},
		pixel: uint32(c.R)<<16 | uint32(c.G)<<8 | uint32(c.B),
	}
	r.mu.Lock()
	r.fills = append(r.fills, f)
	r.mu.Unlock()
	r.draw(f)
	if _, err := xproto.GetInputFocus(r.conn).Reply(); err != nil {
		tb.Fatalf("xrecorder: fill: %v", err)
	}
}

func (r *Recorder) draw(f fill) {
	xproto.ChangeGC(r.conn, r.gc, xproto.GcForeground, []uint32{f.pixel})
	xproto.PolyFillRectangle(r.conn, xproto.Drawable(r.win), r.gc, []xproto.Rectangle{f.r})
}

func (r *Recorder) repaint() {
	r.mu.Lock()
	fills := append([]fill(nil), r.fills...)
	r.mu.Unlock()
	for _, f := range fills {
		r.draw(f)
	}
}

// Down asks the server which keycodes are down and what the pointer's
// modifier and button mask is, to check that nothing was left pressed.
func (r *Recorder) Down(tb testing.TB) (keycodes []int, mask uint16) {
	tb.Helper()
	km, err := xproto.QueryKeymap(r.conn).Reply()
	if err != nil {
		tb.Fatalf("xrecorder: query keymap: %v", err)
	}
	for i, b := range km.Keys {
		for bit := range 8 {
			if b&(1<<bit) != 0 {
				keycodes = append(keycodes, i*8+bit)
			}
		}
	}
	ptr, err := xproto.QueryPointer(r.conn, r.win).Reply()
	if err != nil {
		tb.Fatalf("xrecorder: query pointer: %v", err)
	}
	return keycodes, ptr.Mask
}

// Lookup returns the keysym keycode produces with modifier state, in the
// keyboard mapping as the recorder last read it.
func (r *Recorder) Lookup(keycode int, state uint16) uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys.Keysym(keycode, state)
}
