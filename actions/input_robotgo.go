//go:build linux && cgo

package actions

/*
#cgo LDFLAGS: -lX11 -lXtst
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

// agentd_init installs the error handler and keeps Xlib from using XKB on
// the connections opened after it: an XKB client gets XkbMapNotify instead
// of the core MappingNotify this package watches for keymap changes, and the
// core mapping is all it needs.
static void agentd_init(void) {
	XSetErrorHandler(agentd_on_xerror);
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

// agentd_bind maps keycode to sym on both shift levels (so Shift or a held
// modifier cannot change what it types), or to nothing when sym is 0.
static void agentd_bind(Display *d, int keycode, int per, KeySym sym) {
	KeySym row[per];
	for (int i = 0; i < per; i++) {
		row[i] = NoSymbol;
	}
	if (per > 1) {
		row[1] = sym;
	}
	row[0] = sym;
	XChangeKeyboardMapping(d, keycode, per, row, 1);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/go-vgo/robotgo"
)

// robotgo keeps one X connection per process in C globals, so only one
// robotgo Input may be open at a time.
var (
	robotgoMu   sync.Mutex
	robotgoOpen bool
)

var errInputClosed = errors.New("input is closed")

// rebindAfter is the least time between the last use of a spare keycode and
// binding it to another character. Clients re-read the keymap lazily, when
// they handle the key event, which may be long after it was sent: GTK
// (mousepad) typed a CJK sentence with more distinct characters than spare
// keycodes garbled when keycodes were rebound at once, and exactly with a
// 100 ms gap. 200 ms leaves room for a loaded app; it bounds only text with
// more distinct unmapped characters than spare keycodes (to about 90
// characters per second), ordinary text never waits.
const rebindAfter = 200 * time.Millisecond

// robotgoInput drives one X display. Mouse motion, buttons 1–3 and the
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
type robotgoInput struct {
	calls  chan func()
	stop   chan struct{}
	exited chan struct{}
	once   sync.Once

	// Owned by the X thread.
	dpy      *C.Display
	km       keymap
	codeDown map[C.KeyCode]int  // presses per keycode sent and not released
	keysDown map[string]keyDown // by keysym name
	btnsDown map[Button]bool
}

// keyDown is how a key held by KeyDown was pressed.
type keyDown struct {
	code  C.KeyCode
	shift bool // Shift was pressed with it
}

// NewRobotgoInput opens display (like ":1"; empty means $DISPLAY) for input.
// Only one may be open per process at a time; Close it to open another.
func NewRobotgoInput(display string) (Input, error) {
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

	in := &robotgoInput{
		calls:    make(chan func()),
		stop:     make(chan struct{}),
		exited:   make(chan struct{}),
		codeDown: map[C.KeyCode]int{},
		keysDown: map[string]keyDown{},
		btnsDown: map[Button]bool{},
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
func (in *robotgoInput) loop(display string, ready chan<- error) {
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

// do runs fn on the X thread and returns its error.
func (in *robotgoInput) do(fn func() error) error {
	res := make(chan error, 1)
	call := func() {
		if in.dpy == nil {
			res <- errInputClosed
			return
		}
		res <- fn()
	}
	select {
	case in.calls <- call:
		return <-res
	case <-in.stop:
		return errInputClosed
	}
}

func (in *robotgoInput) open(display string) error {
	C.agentd_init()
	name := C.CString(display)
	defer C.free(unsafe.Pointer(name))
	in.dpy = C.XOpenDisplay(name)
	if in.dpy == nil {
		return errors.New("cannot connect")
	}
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
	if got, want := C.GoString(C.XDisplayString(rdpy)), C.GoString(C.XDisplayString(in.dpy)); got != want {
		return fmt.Errorf("robotgo connected to %q instead", got)
	}
	return in.km.load(in.dpy, true)
}

// closeX releases what is still pressed, removes the keymap bindings made
// for typing, and closes both connections.
func (in *robotgoInput) closeX() {
	if in.dpy == nil {
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
	in.km.unbindAll(in.dpy)
	C.agentd_sync(in.dpy)
	C.XCloseDisplay(in.dpy)
	in.dpy = nil
	robotgo.CloseMainDisplay()
}

// Close implements Input. Keys and buttons still held are released. Closing
// twice is a no-op.
func (in *robotgoInput) Close() error {
	var err error
	in.once.Do(func() {
		err = in.do(func() error { in.closeX(); return nil })
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

// ScreenSize implements Input.
func (in *robotgoInput) ScreenSize() (w, h int, err error) {
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

// MoveTo implements Input.
func (in *robotgoInput) MoveTo(x, y int) error {
	return in.do(func() error {
		robotgo.Move(x, y) // XWarpPointer and XSync
		return xerr("move", C.agentd_take_error())
	})
}

// ButtonDown implements Input.
func (in *robotgoInput) ButtonDown(b Button) error {
	return in.do(func() error { return in.button(b, true) })
}

// ButtonUp implements Input.
func (in *robotgoInput) ButtonUp(b Button) error {
	return in.do(func() error { return in.button(b, false) })
}

func (in *robotgoInput) button(b Button, down bool) error {
	dir := "up"
	if down {
		dir = "down"
		in.btnsDown[b] = true
	} else {
		delete(in.btnsDown, b)
	}
	switch b {
	case Left, Right, Middle:
		name := map[Button]string{Left: "left", Right: "right", Middle: "center"}[b]
		// Toggle sends XTestFakeButtonEvent and XSyncs; with two
		// arguments it does not sleep.
		if err := robotgo.Toggle(name, dir); err != nil {
			return fmt.Errorf("button %s %s: %w", b, dir, err)
		}
		return xerr("button "+dir, C.agentd_take_error())
	case Back, Forward:
		x := map[Button]C.uint{Back: 8, Forward: 9}[b]
		isPress := C.Bool(C.False)
		if down {
			isPress = C.True
		}
		C.XTestFakeButtonEvent(in.dpy, x, isPress, C.CurrentTime)
		return xerr("button "+dir, C.agentd_sync(in.dpy))
	}
	return fmt.Errorf("unknown button %q", b)
}

// Wheel implements Input.
func (in *robotgoInput) Wheel(stepsX, stepsY int) error {
	return in.do(func() error {
		// robotgo sends buttons 4 for y > 0, 5 for y < 0, 6 for x > 0 and 7
		// for x < 0: the opposite signs of Input's. The third argument is
		// its delay after scrolling, which defaults to 10 ms.
		robotgo.Scroll(-stepsX, -stepsY, 0)
		return xerr("wheel", C.agentd_take_error())
	})
}

// KeyDown implements Input. A keysym that needs Shift on this layout is
// pressed with Shift, as a person would; one absent from the layout is bound
// to a spare keycode first.
func (in *robotgoInput) KeyDown(k Key) error {
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

// KeyUp implements Input. A key this Input does not hold is not released: it
// was never pressed, or something else pressed it.
func (in *robotgoInput) KeyUp(k Key) error {
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

// TypeRune implements Input.
func (in *robotgoInput) TypeRune(r rune) error {
	return in.do(func() error {
		sym := runeKeysym(r)
		code, shift, err := in.codeFor(sym, false)
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
func (in *robotgoInput) press(code C.KeyCode) {
	if in.codeDown[code]++; in.codeDown[code] == 1 {
		C.XTestFakeKeyEvent(in.dpy, C.uint(code), C.True, C.CurrentTime)
	}
}

func (in *robotgoInput) release(code C.KeyCode) {
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
func (in *robotgoInput) codeFor(sym C.KeySym, modifier bool) (C.KeyCode, bool, error) {
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
	code, err := in.km.bind(in.dpy, sym)
	return code, false, err
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

// bind maps sym to a free spare keycode, or to the one least recently used.
// Bindings stay until the keycode is needed again or the Input closes (see
// rebindAfter for why they are not undone at once).
func (km *keymap) bind(dpy *C.Display, sym C.KeySym) (C.KeyCode, error) {
	// A free keycode first, else the least recently used.
	better := func(s, than *spareCode) bool {
		if (s.sym == 0) != (than.sym == 0) {
			return s.sym == 0
		}
		return s.lastUsed.Before(than.lastUsed)
	}
	var pick *spareCode
	for _, s := range km.spare {
		if s.held == 0 && (pick == nil || better(s, pick)) {
			pick = s
		}
	}
	if pick == nil {
		return 0, fmt.Errorf("no spare keycode to bind keysym 0x%x to (the keyboard mapping has %d, all in use)", uint64(sym), len(km.spare))
	}
	if wait := rebindAfter - time.Since(pick.lastUsed); pick.sym != 0 && wait > 0 {
		time.Sleep(wait)
	}
	C.agentd_bind(dpy, C.int(pick.code), C.int(km.per), sym)
	if err := xerr("bind keycode", C.agentd_sync(dpy)); err != nil {
		return 0, err
	}
	row := km.row(int(pick.code))
	for i := range row {
		row[i] = C.NoSymbol
	}
	row[0] = sym
	if len(row) > 1 {
		row[1] = sym
	}
	pick.sym, pick.lastUsed = sym, time.Now()
	return pick.code, nil
}

// unbindAll returns every bound spare keycode to no keysym.
func (km *keymap) unbindAll(dpy *C.Display) {
	for _, s := range km.spare {
		if s.sym != 0 {
			C.agentd_bind(dpy, C.int(s.code), C.int(km.per), 0)
			s.sym = 0
		}
	}
}
