//go:build linux && cgo

// Package xtest is the input.Device of an X display: robotgo for the pointer
// and the wheel, XTEST on an Xlib connection of its own for keys, typing and
// the extra buttons (cgo, libX11, libXtst). It survives the X server
// restarting: calls fail with input.ErrDisplayLost while the display is gone
// and reconnect once it is back.
package xtest

/*
#cgo LDFLAGS: -lX11 -lXtst
#include <stdint.h>
#include <stdlib.h>
#include <X11/Xlib.h>
#include <X11/XKBlib.h>
#include <X11/keysym.h>
#include <X11/extensions/XTest.h>

// robotgo's own connection (defined in robotgo's C code). Used only to check
// that robotgo opened the display we asked for: when it cannot, it silently
// falls back to $DISPLAY and then ":0.0", which could be someone's desktop.
extern Display *XGetMainDisplay(void);

// Xlib's default error handler exits the process. Errors are recorded
// instead and turned into Go errors after each synchronised operation. All
// Xlib calls of this package run on one thread, so a plain global is enough.
static int agentd_xerror;

static int agentd_on_xerror(Display *d, XErrorEvent *e) {
	if (agentd_xerror == 0) {
		agentd_xerror = e->error_code;
	}
	return 0;
}

// A lost connection (the X server exited or restarted) is an "IO error".
// Xlib's default handling prints a message and exits the process; agentd
// must instead report the loss and reconnect. The handler stays quiet (the
// Go side reports it), and each connection's exit handler (libX11 ≥ 1.8)
// records which connection was lost, by its tag, and returns: Xlib then
// marks the connection dead, its calls return at once, and XCloseDisplay
// frees it without talking to the server.
static int agentd_xio_lost;

static int agentd_on_xio(Display *d) {
	return 0;
}

static void agentd_on_xio_exit(Display *d, void *tag) {
	agentd_xio_lost |= (int)(intptr_t)tag;
}

static void agentd_guard(Display *d, int tag) {
	XSetIOErrorExitHandler(d, agentd_on_xio_exit, (void *)(intptr_t)tag);
}

// agentd_take_lost returns and clears the tags of the connections lost
// since the last call.
static int agentd_take_lost(void) {
	int l = agentd_xio_lost;
	agentd_xio_lost = 0;
	return l;
}

// agentd_init installs the error handlers and keeps Xlib from using XKB on
// the connections opened after it: an XKB client gets XkbMapNotify instead
// of the core MappingNotify this package watches for keymap changes, and the
// core mapping is all it needs.
static void agentd_init(void) {
	XSetErrorHandler(agentd_on_xerror);
	XSetIOErrorHandler(agentd_on_xio);
	XkbIgnoreExtension(True);
}

// agentd_take_error returns and clears the first error recorded since the
// last call.
static int agentd_take_error(void) {
	int e = agentd_xerror;
	agentd_xerror = 0;
	return e;
}

// agentd_sync waits until the server has processed every request sent so far
// and returns the first error they caused.
static int agentd_sync(Display *d) {
	XSync(d, False);
	return agentd_take_error();
}

// agentd_mapping_changed drains MappingNotify events (the only events this
// connection gets) and reports whether there was one.
static int agentd_mapping_changed(Display *d) {
	XEvent ev;
	int changed = 0;
	while (XCheckTypedEvent(d, MappingNotify, &ev)) {
		changed = 1;
	}
	return changed;
}

// agentd_screen_size asks the server for the root window's size, which
// follows RandR resizes (Xlib's DisplayWidth, which robotgo reads, is the
// size at connection time).
static int agentd_screen_size(Display *d, int *w, int *h) {
	Window root;
	int x, y;
	unsigned int uw, uh, border, depth;
	if (!XGetGeometry(d, DefaultRootWindow(d), &root, &x, &y, &uw, &uh, &border, &depth)) {
		return 0;
	}
	*w = (int)uw;
	*h = (int)uh;
	return 1;
}

// agentd_buttons_down reports which of the buttons in mask the server has
// down. A release sent while another client holds the pointer frozen (a
// synchronous passive grab, such as a window manager's click-to-focus
// binding) is queued, and the button stays down until the grab lets it
// through.
static unsigned int agentd_buttons_down(Display *d, unsigned int mask) {
	Window root, child;
	int rx, ry, wx, wy;
	unsigned int m = 0;
	if (!XQueryPointer(d, DefaultRootWindow(d), &root, &child, &rx, &ry, &wx, &wy, &m)) {
		return 0;
	}
	return m & mask;
}

// agentd_release_stale releases every key and core button the server shows
// down. The server keeps the XTEST presses of a client that is gone (an
// agentd killed in the middle of a drag leaves its modifiers and button
// down); XTEST releases only what the XTEST device itself holds, so keys
// held on a physical keyboard are not touched.
static void agentd_release_stale(Display *d) {
	char keys[32];
	XQueryKeymap(d, keys);
	for (int code = 8; code < 256; code++) {
		if (keys[code / 8] & (1 << (code % 8))) {
			XTestFakeKeyEvent(d, code, False, CurrentTime);
		}
	}
	Window root, child;
	int rx, ry, wx, wy;
	unsigned int m = 0;
	if (XQueryPointer(d, DefaultRootWindow(d), &root, &child, &rx, &ry, &wx, &wy, &m)) {
		for (int b = 1; b <= 5; b++) {
			if (m & (Button1Mask << (b - 1))) {
				XTestFakeButtonEvent(d, b, False, CurrentTime);
			}
		}
	}
	XSync(d, False);
}

// agentd_set_rows replaces the mapping of n keycodes from first with syms
// (per keysyms each): one request, so one MappingNotify.
static void agentd_set_rows(Display *d, int first, int per, KeySym *syms, int n) {
	XChangeKeyboardMapping(d, first, per, syms, n);
}

// agentd_ping_focus asks the client owning the focused top-level window to
// answer a _NET_WM_PING (EWMH): its answer shows that it has read every
// event the server sent it before, MappingNotify included. It returns the
// window pinged, or 0 when the focus is on no window that takes pings.
// The answer comes to the root window: this connection selects
// SubstructureNotify on it until agentd_ping_done.
static Window agentd_ping_focus(Display *d, long token) {
	Window focus, root = DefaultRootWindow(d);
	int revert;
	XGetInputFocus(d, &focus, &revert);
	Atom protocols = XInternAtom(d, "WM_PROTOCOLS", False);
	Atom ping = XInternAtom(d, "_NET_WM_PING", False);
	Window target = 0;
	for (Window w = focus; w != None && w != PointerRoot && w != root && target == 0;) {
		Atom *protos = NULL;
		int n = 0;
		if (XGetWMProtocols(d, w, &protos, &n)) {
			for (int i = 0; i < n; i++) {
				if (protos[i] == ping) {
					target = w;
				}
			}
			XFree(protos);
		}
		Window r, parent, *children = NULL;
		unsigned int nchildren;
		if (!XQueryTree(d, w, &r, &parent, &children, &nchildren)) {
			break;
		}
		if (children) {
			XFree(children);
		}
		w = parent;
	}
	if (target == 0) {
		return 0;
	}
	XSelectInput(d, root, SubstructureNotifyMask);
	XEvent ev = {0};
	ev.xclient.type = ClientMessage;
	ev.xclient.window = target;
	ev.xclient.message_type = protocols;
	ev.xclient.format = 32;
	ev.xclient.data.l[0] = ping;
	ev.xclient.data.l[1] = token;
	ev.xclient.data.l[2] = target;
	XSendEvent(d, target, False, NoEventMask, &ev);
	XFlush(d);
	return target;
}

// agentd_ping_answered reports whether the answer to the ping of target
// with token has come, reading what the server sent so far.
static int agentd_ping_answered(Display *d, Window target, long token) {
	Atom protocols = XInternAtom(d, "WM_PROTOCOLS", True);
	Atom ping = XInternAtom(d, "_NET_WM_PING", True);
	XEvent ev;
	XSync(d, False);
	while (XCheckTypedEvent(d, ClientMessage, &ev)) {
		if (ev.xclient.message_type == protocols && ev.xclient.format == 32 &&
		    (Atom)ev.xclient.data.l[0] == ping && ev.xclient.data.l[1] == token &&
		    (Window)ev.xclient.data.l[2] == target) {
			return 1;
		}
	}
	return 0;
}

static Bool agentd_not_mapping(Display *d, XEvent *ev, XPointer arg) {
	return ev->type != MappingNotify;
}

// agentd_ping_done stops listening on the root window and drops what that
// brought, keeping MappingNotify events for agentd_mapping_changed.
static void agentd_ping_done(Display *d) {
	XEvent ev;
	XSelectInput(d, DefaultRootWindow(d), NoEventMask);
	XSync(d, False);
	while (XCheckIfEvent(d, &ev, agentd_not_mapping, NULL)) {
	}
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/go-vgo/robotgo"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/input"
	"github.com/agentd-dev/agentd/internal/ctxsleep"
)

var _ input.Device = (*Device)(nil)

// robotgo keeps one X connection per process in C globals, so only one
// robotgo input.Device may be open at a time.
var (
	robotgoMu   sync.Mutex
	robotgoOpen bool
)

// rebindAfter is the least time between the last use of a spare keycode and
// binding it to another character. Clients re-read the keymap lazily, when
// they handle the key event, which may be long after it was sent: GTK
// (mousepad) typed a CJK sentence with more distinct characters than spare
// keycodes garbled when keycodes were rebound at once, and exactly with a
// 100 ms gap. 200 ms leaves room for a loaded app; it bounds only text with
// more distinct unmapped characters than spare keycodes (to about 90
// characters per second), ordinary text never waits.
const rebindAfter = 200 * time.Millisecond

// keymapCatchUp bounds the wait after a keyboard mapping change for the
// application with the keyboard focus to show that it has read the change:
// it answers a _NET_WM_PING sent after the change, and X delivers a
// client's events in order, so by then it has seen the MappingNotify. An
// XSync only shows that the server has made the change, not that anyone
// has read it. Firefox ESR answered in 4–90 ms (median about 15) on a
// loaded 2-core machine; 250 ms leaves room for a busy app and bounds the
// cost when it does not answer. keymapSettle is the fixed wait instead
// when the focused window takes no pings (no EWMH client, or no focus).
//
// In those measurements Firefox typed freshly bound characters right
// even with no wait at all: it reads the mapping when it handles the key.
// What lost its input was the window manager (see releaseWait), which
// re-grabs its bindings on every mapping change: one change per text
// instead of one per character shortens that too.
const (
	keymapCatchUp = 250 * time.Millisecond
	keymapSettle  = 50 * time.Millisecond
)

// releaseWait bounds how long ButtonUp waits for the server to process the
// release. A window manager with a click-to-focus binding (openbox's
// default, the exercise desktop's) grabs the button synchronously: after a
// press the pointer is frozen until it has focused and raised the window
// and replayed the press. Key events are not frozen, so text typed right
// after a click reached the window before the click did (into the
// previously focused field), and pointer moves made meanwhile gave the
// queued release and the next click the wrong position. Openbox took up to
// 1.2 s on a loaded 2-core machine while it also handled keyboard mapping
// changes, 50–330 ms otherwise.
const releaseWait = 3 * time.Second

// Device drives one X display. Mouse motion, buttons 1–3 and the
// wheel go through robotgo. Keys, typing and buttons 8/9 go through XTEST on
// a connection of its own, because robotgo cannot do them faithfully: its key API knows only its own table of names and a fixed
// character table, so it cannot press an arbitrary keysym; its Unicode path
// (input_utf) opens a second connection on $DISPLAY rather than the display
// asked for, overwrites the keyboard mapping without restoring it and
// sleeps 5–7 ms per character; and its buttons stop at 7.
//
// Every X call runs on one goroutine locked to its OS thread: Xlib and
// robotgo's C code are not thread-safe. Both connections synchronise after
// each operation, so the server sees the operations in the order made.
type Device struct {
	calls  chan func()
	stop   chan struct{}
	exited chan struct{}
	once   sync.Once

	display string

	// Owned by the X thread. dpy is nil while the display is lost (see
	// reconnect) and after Close.
	closed   bool
	dpy      *C.Display
	km       keymap
	codeDown map[C.KeyCode]int  // presses per keycode sent and not released
	keysDown map[string]keyDown // by keysym name
	btnsDown map[actions.Button]bool
	// plan is the rest of the text given to PrepareText, which TypeRune is
	// expected to type next: a character missing from the keymap binds
	// the next batch of missing characters, not just itself.
	plan      []C.KeySym
	pingToken int64
}

// keyDown is how a key held by KeyDown was pressed.
type keyDown struct {
	code  C.KeyCode
	shift bool // Shift was pressed with it
}

// Open opens display (like ":1"; empty means $DISPLAY) for input.
// Only one may be open per process at a time; Close it to open another.
// Keys and buttons that an earlier XTEST client (a killed agentd) left down
// are released first, here and after every reconnect.
func Open(display string) (*Device, error) {
	if display == "" {
		display = os.Getenv("DISPLAY")
	}
	if display == "" {
		return nil, errors.New("no X display given and $DISPLAY is empty")
	}
	robotgoMu.Lock()
	if robotgoOpen {
		robotgoMu.Unlock()
		return nil, errors.New("a robotgo input is already open in this process (robotgo has one X connection per process)")
	}
	robotgoOpen = true
	robotgoMu.Unlock()

	in := &Device{
		display:  display,
		calls:    make(chan func()),
		stop:     make(chan struct{}),
		exited:   make(chan struct{}),
		codeDown: map[C.KeyCode]int{},
		keysDown: map[string]keyDown{},
		btnsDown: map[actions.Button]bool{},
	}
	ready := make(chan error, 1)
	go in.loop(display, ready)
	if err := <-ready; err != nil {
		<-in.exited
		releaseRobotgo()
		return nil, fmt.Errorf("open X display %q: %w", display, err)
	}
	return in, nil
}

func releaseRobotgo() {
	robotgoMu.Lock()
	robotgoOpen = false
	robotgoMu.Unlock()
}

// loop serves calls on a locked OS thread. It never unlocks: the thread ends
// with the goroutine, and Xlib's per-thread state with it.
func (in *Device) loop(display string, ready chan<- error) {
	runtime.LockOSThread()
	defer close(in.exited)
	if err := in.open(display); err != nil {
		in.closeX()
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case fn := <-in.calls:
			fn()
		case <-in.stop:
			return
		}
	}
}

// Tags of the two connections for agentd_take_lost.
const (
	lostXTest   = 1 // this package's own connection
	lostRobotgo = 2 // robotgo's
)

// do runs fn on the X thread and returns its error. If the display was lost
// it reconnects first; if fn loses it, the error wraps input.ErrDisplayLost.
func (in *Device) do(fn func() error) error {
	return in.run(fn, true)
}

func (in *Device) run(fn func() error, reconnect bool) error {
	res := make(chan error, 1)
	call := func() {
		if in.closed {
			res <- input.ErrClosed
			return
		}
		if in.dpy == nil && reconnect {
			if err := in.reconnect(); err != nil {
				res <- err
				return
			}
		}
		err := fn()
		if lost := C.agentd_take_lost(); lost != 0 {
			in.lose(int(lost))
			err = fmt.Errorf("%w: the connection to the X server of %s broke (it exited or restarted)", input.ErrDisplayLost, in.display)
		}
		res <- err
	}
	select {
	case in.calls <- call:
		return <-res
	case <-in.stop:
		return input.ErrClosed
	}
}

func (in *Device) open(display string) error {
	C.agentd_init()
	name := C.CString(display)
	defer C.free(unsafe.Pointer(name))
	in.dpy = C.XOpenDisplay(name)
	if in.dpy == nil {
		return errors.New("cannot connect")
	}
	C.agentd_guard(in.dpy, lostXTest)
	var evBase, errBase, major, minor C.int
	if C.XTestQueryExtension(in.dpy, &evBase, &errBase, &major, &minor) == 0 {
		return errors.New("the server has no XTEST extension")
	}

	// robotgo's waits: MouseSleep follows Move, Scroll and Click (0 by
	// default, but it is a global anyone may set); Scroll's own delay is
	// passed as 0 below. Scale would rescale coordinates that are already
	// physical pixels.
	robotgo.MouseSleep = 0
	robotgo.Scale = false
	if err := robotgo.SetXDisplayName(display); err != nil {
		return fmt.Errorf("robotgo: %w", err)
	}
	rdpy := C.XGetMainDisplay()
	if rdpy == nil {
		return errors.New("robotgo cannot connect")
	}
	C.agentd_guard(rdpy, lostRobotgo)
	if got, want := C.GoString(C.XDisplayString(rdpy)), C.GoString(C.XDisplayString(in.dpy)); got != want {
		return fmt.Errorf("robotgo connected to %q instead", got)
	}
	C.agentd_release_stale(in.dpy)
	if err := xerr("release what an earlier client left down", C.agentd_take_error()); err != nil {
		return err
	}
	return in.km.load(in.dpy, true)
}

// reconnect opens the display again after it was lost: a restarted X
// server is served without restarting agentd.
func (in *Device) reconnect() error {
	err := in.open(in.display)
	if C.agentd_take_lost() != 0 && err == nil {
		err = errors.New("lost again while connecting")
	}
	if err != nil {
		in.drop()
		return fmt.Errorf("%w: reconnect to %s: %w", input.ErrDisplayLost, in.display, err)
	}
	return nil
}

// lose handles the loss of one or both connections. When the X server is
// still there (only robotgo's connection broke), whatever this input.Device
// pressed is released and its typing bindings removed on the connection
// left before both are closed: the server keeps XTEST presses of a client
// that disconnects.
func (in *Device) lose(lost int) {
	if lost&lostXTest == 0 && in.dpy != nil {
		for b := range in.btnsDown {
			if n, ok := map[actions.Button]C.uint{actions.Left: 1, actions.Middle: 2, actions.Right: 3, actions.Back: 8, actions.Forward: 9}[b]; ok {
				C.XTestFakeButtonEvent(in.dpy, n, C.False, C.CurrentTime)
			}
		}
		for code, n := range in.codeDown {
			if n > 0 {
				C.XTestFakeKeyEvent(in.dpy, C.uint(code), C.False, C.CurrentTime)
			}
		}
		if in.refreshKeymap() == nil {
			in.km.unbindAll(in.dpy)
		}
		C.agentd_sync(in.dpy)
	}
	in.drop()
}

// drop closes both connections and forgets everything tied to them (what
// was pressed, the keymap and its bindings): none of it exists on a new
// server.
func (in *Device) drop() {
	if in.dpy != nil {
		C.XCloseDisplay(in.dpy)
		in.dpy = nil
	}
	robotgo.CloseMainDisplay()
	_ = C.agentd_take_lost()
	_ = C.agentd_take_error()
	clear(in.codeDown)
	clear(in.keysDown)
	clear(in.btnsDown)
	in.plan = in.plan[:0]
	in.km = keymap{}
}

// closeX releases what is still pressed, removes the keymap bindings made
// for typing, and closes both connections.
func (in *Device) closeX() {
	if in.dpy == nil {
		robotgo.CloseMainDisplay()
		return
	}
	for b := range in.btnsDown {
		_ = in.button(b, false)
	}
	for code, n := range in.codeDown {
		if n > 0 {
			C.XTestFakeKeyEvent(in.dpy, C.uint(code), C.False, C.CurrentTime)
		}
	}
	_ = in.refreshKeymap() // the unbinding rewrites a range from this copy
	in.km.unbindAll(in.dpy)
	C.agentd_sync(in.dpy)
	C.XCloseDisplay(in.dpy)
	in.dpy = nil
	robotgo.CloseMainDisplay()
}

// Close implements input.Device. Keys and buttons still held are released. Closing
// twice is a no-op.
func (in *Device) Close() error {
	var err error
	in.once.Do(func() {
		err = in.run(func() error { in.closeX(); in.closed = true; return nil }, false)
		close(in.stop)
		<-in.exited
		releaseRobotgo()
	})
	return err
}

// xerr turns the X error recorded since the last check into a Go error.
func xerr(what string, code C.int) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%s: X error %d", what, int(code))
}

// ScreenSize implements input.Device.
func (in *Device) ScreenSize() (w, h int, err error) {
	err = in.do(func() error {
		var cw, ch C.int
		if C.agentd_screen_size(in.dpy, &cw, &ch) == 0 {
			return errors.New("cannot read the screen size")
		}
		w, h = int(cw), int(ch)
		return xerr("screen size", C.agentd_take_error())
	})
	return w, h, err
}

// MoveTo implements input.Device.
func (in *Device) MoveTo(x, y int) error {
	return in.do(func() error {
		robotgo.Move(x, y) // XWarpPointer and XSync
		return xerr("move", C.agentd_take_error())
	})
}

// ButtonDown implements input.Device.
func (in *Device) ButtonDown(b actions.Button) error {
	return in.do(func() error { return in.button(b, true) })
}

// ButtonUp implements input.Device.
func (in *Device) ButtonUp(b actions.Button) error {
	return in.do(func() error { return in.button(b, false) })
}

func (in *Device) button(b actions.Button, down bool) error {
	dir := "up"
	if down {
		dir = "down"
		in.btnsDown[b] = true
	} else {
		delete(in.btnsDown, b)
	}
	switch b {
	case actions.Left, actions.Right, actions.Middle:
		name := map[actions.Button]string{actions.Left: "left", actions.Right: "right", actions.Middle: "center"}[b]
		// Toggle sends XTestFakeButtonEvent and XSyncs; with two
		// arguments it does not sleep.
		if err := robotgo.Toggle(name, dir); err != nil {
			return fmt.Errorf("button %s %s: %w", b, dir, err)
		}
		if err := xerr("button "+dir, C.agentd_take_error()); err != nil || down {
			return err
		}
		in.awaitRelease(map[actions.Button]C.uint{actions.Left: C.Button1Mask, actions.Middle: C.Button2Mask, actions.Right: C.Button3Mask}[b])
		return nil
	case actions.Back, actions.Forward:
		x := map[actions.Button]C.uint{actions.Back: 8, actions.Forward: 9}[b]
		isPress := C.Bool(C.False)
		if down {
			isPress = C.True
		}
		C.XTestFakeButtonEvent(in.dpy, x, isPress, C.CurrentTime)
		return xerr("button "+dir, C.agentd_sync(in.dpy))
	}
	return fmt.Errorf("unknown button %q", b)
}

// awaitRelease waits until the server no longer has the button of mask
// down, at most releaseWait: see releaseWait. Buttons 8 and 9 have no core
// mask bit and are not waited for.
func (in *Device) awaitRelease(mask C.uint) {
	deadline := time.Now().Add(releaseWait)
	for pause := 500 * time.Microsecond; C.agentd_buttons_down(in.dpy, mask) != 0 && time.Now().Before(deadline); {
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// Wheel implements input.Device.
func (in *Device) Wheel(stepsX, stepsY int) error {
	return in.do(func() error {
		// robotgo sends buttons 4 for y > 0, 5 for y < 0, 6 for x > 0 and 7
		// for x < 0: the opposite signs of input.Device's. The third argument is
		// its delay after scrolling, which defaults to 10 ms.
		robotgo.Scroll(-stepsX, -stepsY, 0)
		return xerr("wheel", C.agentd_take_error())
	})
}

// KeyDown implements input.Device. A keysym that needs Shift on this layout is
// pressed with Shift, as a person would; one absent from the layout is bound
// to a spare keycode first.
func (in *Device) KeyDown(k actions.Key) error {
	return in.do(func() error {
		if _, ok := in.keysDown[k.Keysym]; ok {
			return fmt.Errorf("key %s is already down", k.Keysym)
		}
		sym, err := keysymOf(k.Keysym)
		if err != nil {
			return err
		}
		code, shift, err := in.codeFor(sym, k.Modifier)
		if err != nil {
			return fmt.Errorf("key %s: %w", k.Keysym, err)
		}
		in.keysDown[k.Keysym] = keyDown{code: code, shift: shift}
		in.km.hold(code, true)
		if shift {
			in.press(in.km.shift)
		}
		in.press(code)
		return xerr("key "+k.Keysym+" down", C.agentd_sync(in.dpy))
	})
}

// KeyUp implements input.Device. A key this input.Device does not hold is not released: it
// was never pressed, or something else pressed it.
func (in *Device) KeyUp(k actions.Key) error {
	return in.do(func() error {
		d, ok := in.keysDown[k.Keysym]
		if !ok {
			return nil
		}
		delete(in.keysDown, k.Keysym)
		in.release(d.code)
		if d.shift {
			in.release(in.km.shift)
		}
		in.km.hold(d.code, false)
		return xerr("key "+k.Keysym+" up", C.agentd_sync(in.dpy))
	})
}

// PrepareText implements input.Device: it binds the characters of text that the
// keymap lacks to spare keycodes in one XChangeKeyboardMapping (the first
// ones only, if there are more than spare keycodes: TypeRune binds the next
// batch when it gets there), then, if that changed the mapping, waits for
// the focused application to catch up (see keymapCatchUp).
func (in *Device) PrepareText(ctx context.Context, text string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return in.do(func() error {
		in.plan = in.plan[:0]
		for _, r := range text {
			in.plan = append(in.plan, runeKeysym(r))
		}
		changed, err := in.bindNext(ctx)
		if err != nil || !changed {
			return err
		}
		return in.catchUp(ctx)
	})
}

// TypeRune implements input.Device.
func (in *Device) TypeRune(r rune) error {
	return in.do(func() error {
		sym := runeKeysym(r)
		if len(in.plan) > 0 && in.plan[0] != sym {
			in.plan = in.plan[:0] // typing something else than prepared
		}
		code, shift, err := in.codeFor(sym, false)
		if len(in.plan) > 0 {
			in.plan = in.plan[1:]
		}
		if err != nil {
			return fmt.Errorf("type %q: %w", r, err)
		}
		if shift {
			in.press(in.km.shift)
		}
		in.press(code)
		in.release(code)
		if shift {
			in.release(in.km.shift)
		}
		return xerr(fmt.Sprintf("type %q", r), C.agentd_sync(in.dpy))
	})
}

// press and release count presses per keycode, so a keycode two keys share
// (Shift for "!" while Shift is held) goes down once and up last.
func (in *Device) press(code C.KeyCode) {
	if in.codeDown[code]++; in.codeDown[code] == 1 {
		C.XTestFakeKeyEvent(in.dpy, C.uint(code), C.True, C.CurrentTime)
	}
}

func (in *Device) release(code C.KeyCode) {
	switch in.codeDown[code] {
	case 0:
		return
	case 1:
		delete(in.codeDown, code)
		C.XTestFakeKeyEvent(in.dpy, C.uint(code), C.False, C.CurrentTime)
	default:
		in.codeDown[code]--
	}
}

// codeFor finds the keycode that types sym and whether it needs Shift,
// binding sym to a spare keycode when the layout lacks it. Modifier keys
// never get Shift added: their keycode is what matters.
func (in *Device) codeFor(sym C.KeySym, modifier bool) (C.KeyCode, bool, error) {
	if C.agentd_mapping_changed(in.dpy) != 0 {
		if err := in.km.load(in.dpy, false); err != nil {
			return 0, false, err
		}
	}
	if code, level, ok := in.km.lookup(sym); ok {
		in.km.touch(code)
		shift := level == 1 && !modifier
		if shift && in.km.shift == 0 {
			return 0, false, errors.New("it needs Shift and the keyboard mapping has no Shift_L")
		}
		return code, shift, nil
	}
	// Missing: bind it, with the next missing characters of the prepared
	// text if it is the next one of them, and let the apps catch up.
	if len(in.plan) == 0 || in.plan[0] != sym {
		in.plan = append(in.plan[:0], sym)
	}
	if _, err := in.bindNext(context.Background()); err != nil {
		return 0, false, err
	}
	if err := in.catchUp(context.Background()); err != nil {
		return 0, false, err
	}
	code, _, ok := in.km.lookup(sym)
	if !ok {
		return 0, false, fmt.Errorf("keysym 0x%x was not bound", uint64(sym))
	}
	in.km.touch(code)
	return code, false, nil
}

// refreshKeymap makes sure every MappingNotify the server sent so far has
// been seen, and reloads the mapping if there was one: a batch of bindings
// rewrites a range of keycodes from this copy.
func (in *Device) refreshKeymap() error {
	if err := xerr("sync", C.agentd_sync(in.dpy)); err != nil {
		return err
	}
	if C.agentd_mapping_changed(in.dpy) != 0 {
		return in.km.load(in.dpy, false)
	}
	return nil
}

// bindNext binds the missing keysyms at the start of in.plan, as many as
// the spare keycodes allow, in one mapping change; it reports whether it
// changed the mapping.
func (in *Device) bindNext(ctx context.Context) (bool, error) {
	if err := in.refreshKeymap(); err != nil {
		return false, err
	}
	picks, syms := in.km.planBatch(in.plan)
	if len(syms) == 0 {
		if len(in.plan) > 0 {
			if _, _, ok := in.km.lookup(in.plan[0]); !ok {
				return false, fmt.Errorf("no spare keycode to bind keysym 0x%x to (the keyboard mapping has %d, all in use)", uint64(in.plan[0]), len(in.km.spare))
			}
		}
		return false, nil
	}
	// A keycode used for a character moments ago may not have been read
	// yet by the app it was typed in (see rebindAfter).
	var wait time.Duration
	for _, p := range picks {
		if p.sym != 0 {
			wait = max(wait, rebindAfter-time.Since(p.lastUsed))
		}
	}
	if wait > 0 {
		if err := ctxsleep.Sleep(ctx, wait); err != nil {
			return false, err
		}
	}
	return true, in.km.bindAll(in.dpy, picks, syms)
}

// catchUp waits until the focused application has read the mapping change
// just made: see keymapCatchUp.
func (in *Device) catchUp(ctx context.Context) error {
	in.pingToken++
	token := C.long(in.pingToken)
	target := C.agentd_ping_focus(in.dpy, token)
	if target == 0 {
		_ = C.agentd_take_error()
		return ctxsleep.Sleep(ctx, keymapSettle)
	}
	defer C.agentd_ping_done(in.dpy)
	deadline := time.Now().Add(keymapCatchUp)
	for pause := 500 * time.Microsecond; C.agentd_ping_answered(in.dpy, target, token) == 0 && time.Now().Before(deadline); {
		if err := ctxsleep.Sleep(ctx, pause); err != nil {
			return err
		}
		pause = min(2*pause, 5*time.Millisecond)
	}
	// An error here is the focused window going away under us: nothing
	// to wait for any more.
	_ = C.agentd_take_error()
	return nil
}

// keysymOf resolves an X keysym name, "U20AC" forms included.
func keysymOf(name string) (C.KeySym, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	sym := C.XStringToKeysym(cname)
	if sym == C.NoSymbol {
		return 0, fmt.Errorf("unknown keysym %q", name)
	}
	return sym, nil
}

// runeKeysym is the keysym that types r: Latin-1 characters are their own
// keysyms, everything else is a Unicode keysym (0x01000000 + code point).
func runeKeysym(r rune) C.KeySym {
	switch {
	case r == '\n' || r == '\r':
		return C.XK_Return
	case r == '\t':
		return C.XK_Tab
	case (r >= 0x20 && r < 0x7f) || (r >= 0xa0 && r <= 0xff):
		return C.KeySym(r)
	}
	return C.KeySym(0x01000000 | r)
}

// keymap is this connection's copy of the keyboard mapping and the spare
// keycodes (those without any keysym) it may bind characters to.
type keymap struct {
	min   int
	per   int
	syms  []C.KeySym // per keysyms per keycode, from min
	shift C.KeyCode  // the keycode of Shift_L, 0 if none
	spare []*spareCode
}

type spareCode struct {
	code     C.KeyCode
	sym      C.KeySym // bound keysym, 0 when free
	lastUsed time.Time
	held     int // KeyDown presses holding it
}

// load reads the mapping. The first load collects the spare keycodes; later
// ones (after a MappingNotify) keep only those still free or still bound by
// us, so a layout change by someone else never loses a key to us.
func (km *keymap) load(dpy *C.Display, first bool) error {
	var minc, maxc, per C.int
	C.XDisplayKeycodes(dpy, &minc, &maxc)
	n := int(maxc - minc + 1)
	p := C.XGetKeyboardMapping(dpy, C.KeyCode(minc), C.int(n), &per)
	if p == nil {
		return errors.New("cannot read the keyboard mapping")
	}
	km.min, km.per = int(minc), int(per)
	km.syms = append(km.syms[:0], unsafe.Slice(p, n*int(per))...)
	C.XFree(unsafe.Pointer(p))
	km.shift, _, _ = km.lookup(C.XK_Shift_L)
	if first {
		// Keycode 8 is left alone: it is evdev's KEY_RESERVED, which some
		// toolkits drop.
		for code := max(km.min, 9); code < km.min+n; code++ {
			if km.free(code) {
				km.spare = append(km.spare, &spareCode{code: C.KeyCode(code)})
			}
		}
		return nil
	}
	kept := km.spare[:0]
	for _, s := range km.spare {
		switch {
		case km.free(int(s.code)):
			s.sym = 0
		case s.sym == 0 || km.row(int(s.code))[0] != s.sym:
			continue // taken by someone else
		}
		kept = append(kept, s)
	}
	km.spare = kept
	return nil
}

func (km *keymap) row(code int) []C.KeySym {
	i := (code - km.min) * km.per
	return km.syms[i : i+km.per]
}

func (km *keymap) free(code int) bool {
	for _, s := range km.row(code) {
		if s != C.NoSymbol {
			return false
		}
	}
	return true
}

// lookup finds a keycode with sym on shift level 0, else level 1.
func (km *keymap) lookup(sym C.KeySym) (C.KeyCode, int, bool) {
	n := len(km.syms) / km.per
	for level := 0; level < min(2, km.per); level++ {
		for i := range n {
			if km.syms[i*km.per+level] == sym {
				return C.KeyCode(km.min + i), level, true
			}
		}
	}
	return 0, 0, false
}

func (km *keymap) spareOf(code C.KeyCode) *spareCode {
	for _, s := range km.spare {
		if s.code == code {
			return s
		}
	}
	return nil
}

// touch marks a spare keycode as just used, so it is the last to be rebound.
func (km *keymap) touch(code C.KeyCode) {
	if s := km.spareOf(code); s != nil {
		s.lastUsed = time.Now()
	}
}

// hold marks a spare keycode held down (or no longer) by KeyDown, so it is
// not rebound while down.
func (km *keymap) hold(code C.KeyCode, down bool) {
	if s := km.spareOf(code); s != nil {
		if down {
			s.held++
		} else if s.held > 0 {
			s.held--
		}
		s.lastUsed = time.Now()
	}
}

// planBatch picks spare keycodes for the keysyms of text (the rest of a
// text to type, in order) that the mapping lacks, from the first one on,
// for as many as can be bound at once: free keycodes first, then the least
// recently used, but never one that is held down or bound to a keysym
// needed before the batch ends. It returns the keycodes and, in the same
// order, the keysyms to bind to them; nothing if none is missing.
func (km *keymap) planBatch(text []C.KeySym) ([]*spareCode, []C.KeySym) {
	keep := map[*spareCode]bool{} // bound to a keysym the batch's text uses
	seen := map[C.KeySym]bool{}
	var syms []C.KeySym
	usable := 0
	for _, s := range km.spare {
		if s.held == 0 {
			usable++
		}
	}
	for _, sym := range text {
		if seen[sym] {
			continue
		}
		seen[sym] = true
		if code, _, ok := km.lookup(sym); ok {
			if s := km.spareOf(code); s != nil && s.held == 0 {
				if len(syms)+len(keep)+1 > usable {
					break // keeping it would leave a missing one without a keycode
				}
				keep[s] = true
			}
			continue
		}
		if len(syms)+len(keep)+1 > usable {
			break
		}
		syms = append(syms, sym)
	}
	// A free keycode first, else the least recently used.
	var cands []*spareCode
	for _, s := range km.spare {
		if s.held == 0 && !keep[s] {
			cands = append(cands, s)
		}
	}
	slices.SortStableFunc(cands, func(a, b *spareCode) int {
		if (a.sym == 0) != (b.sym == 0) {
			if a.sym == 0 {
				return -1
			}
			return 1
		}
		return a.lastUsed.Compare(b.lastUsed)
	})
	return cands[:len(syms)], syms
}

// bindAll binds syms[i] to picks[i] (NoSymbol unbinds) in one
// XChangeKeyboardMapping over the range of keycodes from the lowest pick
// to the highest; the keycodes between keep their mapping (this copy is
// fresh: see refreshKeymap). Bindings stay until the keycode is needed
// again or the input.Device closes (see rebindAfter for why they are not undone
// at once).
func (km *keymap) bindAll(dpy *C.Display, picks []*spareCode, syms []C.KeySym) error {
	lo, hi := int(picks[0].code), int(picks[0].code)
	for _, p := range picks {
		lo, hi = min(lo, int(p.code)), max(hi, int(p.code))
	}
	rows := make([]C.KeySym, 0, (hi-lo+1)*km.per)
	for code := lo; code <= hi; code++ {
		rows = append(rows, km.row(code)...)
	}
	for i, p := range picks {
		row := rows[(int(p.code)-lo)*km.per:][:km.per]
		for j := range row {
			row[j] = C.NoSymbol
		}
		row[0] = syms[i]
		if len(row) > 1 {
			row[1] = syms[i]
		}
	}
	C.agentd_set_rows(dpy, C.int(lo), C.int(km.per), &rows[0], C.int(hi-lo+1))
	if err := xerr("bind keycodes", C.agentd_sync(dpy)); err != nil {
		return err
	}
	copy(km.syms[(lo-km.min)*km.per:], rows)
	now := time.Now()
	for i, p := range picks {
		p.sym, p.lastUsed = syms[i], now
	}
	return nil
}

// unbindAll returns every bound spare keycode to no keysym, in one
// mapping change.
func (km *keymap) unbindAll(dpy *C.Display) {
	var picks []*spareCode
	var syms []C.KeySym
	for _, s := range km.spare {
		if s.sym != 0 {
			picks = append(picks, s)
			syms = append(syms, C.NoSymbol)
		}
	}
	if len(picks) > 0 {
		_ = km.bindAll(dpy, picks, syms)
	}
	for _, s := range km.spare {
		s.sym = 0
	}
}
