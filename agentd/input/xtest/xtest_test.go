//go:build linux && cgo

package xtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/agentd/input"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

const waitX = 5 * time.Second

// xfix is a private Xvfb with a recorder window over it and an executor.Executor on a
// robotgo input.Device.
type xfix struct {
	display string
	rec     *xrecorder.Recorder
	in      input.Device
	ex      *executor.Executor
}

func startX(tb testing.TB) *xfix {
	tb.Helper()
	x := xvfbtest.Start(tb, 800, 600)
	rec := xrecorder.Start(tb, x.Display)
	in, err := Open(x.Display)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := in.Close(); err != nil {
			tb.Errorf("close input: %v", err)
		}
	})
	return &xfix{display: x.Display, rec: rec, in: in, ex: executor.New(in, executor.Options{Logf: tb.Logf})}
}

func (f *xfix) do(tb testing.TB, a actions.Action) executor.Result {
	tb.Helper()
	res, err := f.ex.Do(context.Background(), a)
	if err != nil {
		tb.Fatalf("%v: %v", a, err)
	}
	return res
}

// assertNothingDown checks with the server that no key or button is down.
func (f *xfix) assertNothingDown(t *testing.T) {
	t.Helper()
	// The server has released everything when Down says so, but the
	// recorder may not have read the release events yet: sync, so the next
	// subtest's Clear cannot be followed by this one's late events.
	f.rec.Sync(t)
	keys, mask := f.rec.Down(t)
	if len(keys) > 0 || mask != 0 {
		t.Errorf("left down: keycodes %v, pointer mask 0x%x", keys, mask)
	}
}

func ofKind(evs []xrecorder.Event, k xrecorder.Kind) []xrecorder.Event {
	var out []xrecorder.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func isRelease(button int) func(xrecorder.Event) bool {
	return func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease && e.Button == button }
}

func TestRobotgoInput(t *testing.T) {
	f := startX(t)
	ctrlShift := uint16(xrecorder.ControlMask | xrecorder.ShiftMask)

	t.Run("buttons", func(t *testing.T) {
		for i, c := range []struct {
			b       actions.Button
			xbutton int
		}{{actions.Left, 1}, {actions.Middle, 2}, {actions.Right, 3}, {actions.Back, 8}, {actions.Forward, 9}} {
			f.rec.Clear()
			x, y := 100+i*50, 200+i*10
			f.do(t, actions.Action{Type: actions.Click, X: x, Y: y, Button: c.b})
			f.rec.WaitFor(t, isRelease(c.xbutton), waitX)
			press := f.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress }, 0)
			if press.Button != c.xbutton || press.X != x || press.Y != y {
				t.Errorf("%s: press %v, want button %d at %d,%d", c.b, press, c.xbutton, x, y)
			}
		}
		f.assertNothingDown(t)
	})

	t.Run("wheel", func(t *testing.T) {
		f.rec.Clear()
		res := f.do(t, actions.Action{Type: actions.Scroll, X: 10, Y: 10, ScrollX: 60, ScrollY: 150})
		if res.ScrollSteps != (actions.Point{X: 1, Y: 3}) {
			t.Errorf("steps = %v, want {1 3}", res.ScrollSteps)
		}
		f.do(t, actions.Action{Type: actions.Scroll, X: 10, Y: 10, ScrollX: -130, ScrollY: -1})
		evs := f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(ofKind(evs, xrecorder.ButtonRelease)) == 7 }, waitX)
		count := map[int]int{}
		for _, e := range ofKind(evs, xrecorder.ButtonPress) {
			count[e.Button]++
		}
		if want := map[int]int{7: 1, 5: 3, 6: 2, 4: 1}; fmt.Sprint(count) != fmt.Sprint(want) {
			t.Errorf("wheel presses by button %v, want %v", count, want)
		}
	})

	t.Run("modifiers held during click", func(t *testing.T) {
		f.rec.Clear()
		f.do(t, actions.Action{Type: actions.Click, X: 50, Y: 60, Keys: []string{"ctrl", "shift"}})
		press := f.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress }, waitX)
		if press.State&ctrlShift != ctrlShift {
			t.Errorf("press state 0x%x, want ctrl+shift", press.State)
		}
		f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(ofKind(evs, xrecorder.KeyRelease)) == 2 }, waitX)
		f.assertNothingDown(t)
	})

	t.Run("modifiers held during scroll", func(t *testing.T) {
		f.rec.Clear()
		f.do(t, actions.Action{Type: actions.Scroll, X: 50, Y: 60, ScrollY: 60, Keys: []string{"ctrl"}})
		e := f.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress && e.Button == 5 }, waitX)
		if e.State&xrecorder.ControlMask == 0 {
			t.Errorf("wheel press state 0x%x, want ctrl", e.State)
		}
		f.assertNothingDown(t)
	})

	t.Run("drag path with modifier", func(t *testing.T) {
		f.rec.Clear()
		path := []actions.Point{{X: 100, Y: 100}, {X: 300, Y: 100}, {X: 300, Y: 250}, {X: 290, Y: 240}}
		f.do(t, actions.Action{Type: actions.Drag, Path: path, Keys: []string{"alt"}})
		evs := f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(ofKind(evs, xrecorder.ButtonRelease)) == 1 }, waitX)
		var pressed bool
		var last actions.Point
		next := 1
		for _, e := range evs {
			switch e.Kind {
			case xrecorder.ButtonPress:
				pressed, last = true, actions.Point{X: e.X, Y: e.Y}
				if last != path[0] || e.Button != 1 {
					t.Errorf("press %v, want button 1 at %v", e, path[0])
				}
			case xrecorder.Motion:
				if !pressed {
					continue
				}
				p := actions.Point{X: e.X, Y: e.Y}
				if d := max(p.X-last.X, last.X-p.X, p.Y-last.Y, last.Y-p.Y); d > executor.DefaultDragStepPixels {
					t.Errorf("motion jumps %d px from %v to %v", d, last, p)
				}
				if e.State&(xrecorder.Button1Mask|xrecorder.Mod1Mask) != xrecorder.Button1Mask|xrecorder.Mod1Mask {
					t.Errorf("motion state 0x%x, want button 1 and alt", e.State)
				}
				if next < len(path) && p == path[next] {
					next++
				}
				last = p
			case xrecorder.ButtonRelease:
				if (actions.Point{X: e.X, Y: e.Y}) != path[len(path)-1] || e.State&xrecorder.Mod1Mask == 0 {
					t.Errorf("release %v, want at %v with alt", e, path[len(path)-1])
				}
			}
		}
		if next != len(path) {
			t.Errorf("motion passed %d of the %d path points after the first", next-1, len(path)-1)
		}
		f.assertNothingDown(t)
	})

	t.Run("move with modifier", func(t *testing.T) {
		f.rec.Clear()
		f.do(t, actions.Action{Type: actions.Move, X: 123, Y: 45, Keys: []string{"shift"}})
		e := f.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.Motion && e.X == 123 && e.Y == 45 }, waitX)
		if e.State&xrecorder.ShiftMask == 0 {
			t.Errorf("motion state 0x%x, want shift", e.State)
		}
		f.assertNothingDown(t)
	})

	t.Run("type unicode", func(t *testing.T) {
		f.rec.Clear()
		text := "Zoë Ñúñez-Łukasz, 東京, €5 ✓ 🙂"
		f.do(t, actions.Action{Type: actions.TypeText, Text: text})
		f.rec.WaitTyped(t, text, waitX)
		f.assertNothingDown(t)
	})

	t.Run("type multi-line ascii", func(t *testing.T) {
		f.rec.Clear()
		text := "Dear Sir,\n\tprintf(\"%d\\n\", a[i] + b{c}); // 100% ok?\r\n~`!@#$^&*()_-+=|;:'<>,./\nEND"
		f.do(t, actions.Action{Type: actions.TypeText, Text: text})
		f.rec.WaitTyped(t, strings.ReplaceAll(text, "\r\n", "\n"), waitX)
		f.assertNothingDown(t)
	})

	t.Run("keypress combo", func(t *testing.T) {
		f.rec.Clear()
		f.do(t, actions.Action{Type: actions.Keypress, Keys: []string{"ctrl", "shift", "a"}})
		evs := f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(ofKind(evs, xrecorder.KeyRelease)) == 3 }, waitX)
		var got []string
		for _, e := range evs {
			if e.Kind == xrecorder.KeyPress || e.Kind == xrecorder.KeyRelease {
				got = append(got, fmt.Sprintf("%s:%#x", e.Kind, e.Keysym))
			}
		}
		// The a key's keysym reads as A: Shift is down.
		want := []string{"KeyPress:0xffe3", "KeyPress:0xffe1", "KeyPress:0x41", "KeyRelease:0x41", "KeyRelease:0xffe1", "KeyRelease:0xffe3"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("key events %v, want %v", got, want)
		}
		if a := ofKind(evs, xrecorder.KeyPress)[2]; a.State&ctrlShift != ctrlShift {
			t.Errorf("a pressed with state 0x%x, want ctrl+shift", a.State)
		}
		f.assertNothingDown(t)
	})

	t.Run("keypress of shifted and unmapped keys", func(t *testing.T) {
		for _, c := range []struct {
			keys  []string
			sym   uint32
			state uint16
		}{
			{[]string{"!"}, '!', xrecorder.ShiftMask},
			{[]string{"ctrl", "é"}, 0xe9, xrecorder.ControlMask},
			{[]string{"F13"}, 0xffca, 0},
			{[]string{"XF86Back"}, 0x1008ff26, 0},
		} {
			f.rec.Clear()
			f.do(t, actions.Action{Type: actions.Keypress, Keys: c.keys})
			e := f.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.KeyPress && e.Keysym == c.sym }, waitX)
			if e.State != c.state {
				t.Errorf("%v: state 0x%x, want 0x%x", c.keys, e.State, c.state)
			}
			f.rec.Sync(t)
			f.assertNothingDown(t)
		}
	})

	t.Run("double click timing", func(t *testing.T) {
		f.rec.Clear()
		f.do(t, actions.Action{Type: actions.DoubleClick, X: 400, Y: 300})
		evs := f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(ofKind(evs, xrecorder.ButtonRelease)) == 2 }, waitX)
		p := ofKind(evs, xrecorder.ButtonPress)
		if len(p) != 2 || p[0].Button != 1 || p[1].Button != 1 || p[0].X != p[1].X || p[0].Y != p[1].Y {
			t.Fatalf("presses %v, want two left presses at one point", p)
		}
		// xterm's multiClickTime is 250 ms, GTK's double-click time 400 ms.
		if dt := p[1].Time - p[0].Time; dt >= 250 {
			t.Errorf("presses %d ms apart, want < 250", dt)
		}
	})

	t.Run("off-screen click does nothing", func(t *testing.T) {
		f.rec.Clear()
		if _, err := f.ex.Do(context.Background(), actions.Action{Type: actions.Click, X: 800, Y: 10}); err == nil {
			t.Fatal("no error")
		}
		f.rec.Sync(t)
		if evs := f.rec.Events(); len(evs) > 0 {
			t.Errorf("events %v, want none", evs)
		}
	})

	t.Run("failed action leaves nothing down", func(t *testing.T) {
		f.rec.Clear()
		boom := errors.New("boom")
		ex := executor.New(hookInput{Device: f.in, before: func(op string) error {
			if op == "ButtonDown" {
				return boom
			}
			return nil
		}}, executor.Options{})
		_, err := ex.Do(context.Background(), actions.Action{Type: actions.Click, X: 10, Y: 10, Keys: []string{"ctrl", "alt", "shift"}})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
		f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(ofKind(evs, xrecorder.KeyRelease)) == 3 }, waitX)
		f.assertNothingDown(t)
	})

	t.Run("cancelled type leaves nothing down", func(t *testing.T) {
		f.rec.Clear()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		ex := executor.New(hookInput{Device: f.in, before: func(op string) error {
			if n++; n == 4 {
				cancel()
			}
			return nil
		}}, executor.Options{})
		_, err := ex.Do(ctx, actions.Action{Type: actions.TypeText, Text: "AbC!éfgh"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		f.rec.WaitTyped(t, "AbC!", waitX)
		f.assertNothingDown(t)
	})
}

// hookInput runs before ahead of ButtonDown and TypeRune and fails them
// with its error.
type hookInput struct {
	input.Device
	before func(op string) error
}

func (h hookInput) ButtonDown(b actions.Button) error {
	if err := h.before("ButtonDown"); err != nil {
		return err
	}
	return h.Device.ButtonDown(b)
}

func (h hookInput) TypeRune(r rune) error {
	if err := h.before("TypeRune"); err != nil {
		return err
	}
	return h.Device.TypeRune(r)
}

func TestRobotgoInputCloseReleasesAndRestores(t *testing.T) {
	f := startX(t)
	if err := f.in.TypeRune('ß'); err != nil {
		t.Fatal(err)
	}
	press := f.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.KeyPress }, waitX)
	if press.Char != 'ß' {
		t.Fatalf("typed %q, want ß", press.Char)
	}
	if err := f.in.KeyDown(actions.Key{Keysym: "Shift_L", Modifier: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.in.ButtonDown(actions.Right); err != nil {
		t.Fatal(err)
	}
	if err := f.in.Close(); err != nil {
		t.Fatal(err)
	}
	f.rec.Sync(t)
	f.assertNothingDown(t)
	if sym := f.rec.Lookup(press.Keycode, 0); sym != 0 {
		t.Errorf("keycode %d still maps to 0x%x after Close", press.Keycode, sym)
	}
	if err := f.in.MoveTo(1, 1); !errors.Is(err, input.ErrClosed) {
		t.Errorf("MoveTo after Close: %v, want input.ErrClosed", err)
	}
	if err := f.in.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRobotgoInputFollowsKeymapChanges remaps the a key to b from another
// client, as a layout switch would: typing must follow the new mapping.
func TestRobotgoInputFollowsKeymapChanges(t *testing.T) {
	f := startX(t)
	f.do(t, actions.Action{Type: actions.TypeText, Text: "ab"})
	f.rec.WaitTyped(t, "ab", waitX)
	aCode := ofKind(f.rec.Events(), xrecorder.KeyPress)[0].Keycode

	conn, err := xgb.NewConnDisplay(f.display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	km, err := xproto.GetKeyboardMapping(conn, xproto.Keycode(aCode), 1).Reply()
	if err != nil {
		t.Fatal(err)
	}
	row := make([]xproto.Keysym, km.KeysymsPerKeycode)
	row[0], row[1] = 'b', 'B'
	if err := xproto.ChangeKeyboardMappingChecked(conn, 1, xproto.Keycode(aCode), km.KeysymsPerKeycode, row).Check(); err != nil {
		t.Fatal(err)
	}
	f.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.MappingChange }, waitX)

	f.rec.Clear()
	f.do(t, actions.Action{Type: actions.TypeText, Text: "aAbB"})
	f.rec.WaitTyped(t, "aAbB", waitX)
}

func TestRobotgoInputOpen(t *testing.T) {
	x := xvfbtest.Start(t, 320, 200)
	if _, err := Open(":424242"); err == nil || !strings.Contains(err.Error(), `":424242"`) {
		t.Errorf("unreachable display: err = %v", err)
	}
	t.Setenv("DISPLAY", "")
	if _, err := Open(""); err == nil {
		t.Error("no display: no error")
	}
	t.Setenv("DISPLAY", x.Display)
	in, err := Open("")
	if err != nil {
		t.Fatalf("$DISPLAY: %v", err)
	}
	defer in.Close()
	if w, h, err := in.ScreenSize(); w != 320 || h != 200 || err != nil {
		t.Errorf("ScreenSize = %d, %d, %v; want 320, 200", w, h, err)
	}
	if _, err := Open(x.Display); err == nil || !strings.Contains(err.Error(), "already open") {
		t.Errorf("second input: err = %v, want already open", err)
	}
}

func BenchmarkClickRoundTrip(b *testing.B) {
	f := startX(b)
	ctx := context.Background()
	a := actions.Action{Type: actions.Click, X: 200, Y: 150}
	for b.Loop() {
		f.rec.Clear()
		if _, err := f.ex.Do(ctx, a); err != nil {
			b.Fatal(err)
		}
		f.rec.WaitFor(b, isRelease(1), waitX)
	}
}

func benchmarkType(b *testing.B, text string) {
	f := startX(b)
	ctx := context.Background()
	a := actions.Action{Type: actions.TypeText, Text: text}
	n := 0
	for b.Loop() {
		f.rec.Clear()
		if _, err := f.ex.Do(ctx, a); err != nil {
			b.Fatal(err)
		}
		f.rec.WaitTyped(b, text, waitX)
		n++
	}
	b.ReportMetric(float64(n*len([]rune(text)))/b.Elapsed().Seconds(), "chars/s")
}

func BenchmarkTypeASCII(b *testing.B) {
	benchmarkType(b, "The quick brown fox jumps over the lazy dog; PACK MY BOX with 5 dozen liquor jugs! (x+y)*2=z?\n")
}

// BenchmarkTypeUnicode types characters the layout lacks; after the first
// round they stay bound to spare keycodes.
func BenchmarkTypeUnicode(b *testing.B) {
	benchmarkType(b, "Zoë Ñúñez-Łukasz, 東京, €5 ✓ 🙂")
}

// BenchmarkTypeManyDistinct types more distinct unmapped characters than
// there are spare keycodes, so every one is bound again each time (the
// worst case, bounded by rebindAfter).
func BenchmarkTypeManyDistinct(b *testing.B) {
	benchmarkType(b, "日本語の文章を入力する速度を測定します。漢字と仮名が混ざった長い文です。")
}

func mappingChanges(evs []xrecorder.Event) int { return len(ofKind(evs, xrecorder.MappingChange)) }

// warmUp types a plain key and forgets the events: the server's first XTEST
// key event switches the core keyboard to the XTEST device, which core
// clients see as a keyboard mapping change of its own.
func (f *xfix) warmUp(t *testing.T) {
	t.Helper()
	f.do(t, actions.Action{Type: actions.TypeText, Text: "a"})
	f.rec.WaitTyped(t, "a", waitX)
	f.rec.Sync(t)
	f.rec.Clear()
}

// spareKeycodes is how many keycodes the input.Device may bind characters to.
func spareKeycodes(t *testing.T, in input.Device) int {
	t.Helper()
	ri := in.(*Device)
	var n int
	if err := ri.do(func() error { n = len(ri.km.spare); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRobotgoInputBindsATextAtOnce: every character of a text the layout
// lacks is bound in one keyboard mapping change, before the first key
// event; typing them again changes nothing.
func TestRobotgoInputBindsATextAtOnce(t *testing.T) {
	f := startX(t)
	f.warmUp(t)
	text := "Zoë Ñúñez-Łukasz, ŁÓDŹ żółć"
	f.do(t, actions.Action{Type: actions.TypeText, Text: text})
	evs := f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool {
		return xrecorder.Typed(evs) == text
	}, waitX)
	if n := mappingChanges(evs); n != 1 {
		t.Errorf("%d keyboard mapping changes, want 1", n)
	}
	for i, e := range evs {
		if e.Kind == xrecorder.MappingChange {
			if k := ofKind(evs[:i], xrecorder.KeyPress); len(k) > 0 {
				t.Errorf("mapping changed after %d key presses, want before the first", len(k))
			}
		}
	}

	f.rec.Clear()
	f.do(t, actions.Action{Type: actions.TypeText, Text: text})
	f.rec.WaitTyped(t, text, waitX)
	f.rec.Sync(t)
	if n := mappingChanges(f.rec.Events()); n != 0 {
		t.Errorf("typing it again: %d keyboard mapping changes, want 0", n)
	}
	f.assertNothingDown(t)
}

// TestRobotgoInputMoreCharactersThanSpareKeycodes: a text with more
// distinct missing characters than spare keycodes is typed right, in as
// few mapping changes as the keycodes allow.
func TestRobotgoInputMoreCharactersThanSpareKeycodes(t *testing.T) {
	f := startX(t)
	f.warmUp(t)
	spare := spareKeycodes(t, f.in)
	var b strings.Builder
	for i := range spare + 10 {
		b.WriteRune(rune(0x4e00 + i)) // CJK ideographs, none in the layout
		if i%7 == 0 {
			b.WriteRune(rune(0x4e00 + i/2)) // and some repeated
		}
	}
	text := b.String()
	f.do(t, actions.Action{Type: actions.TypeText, Text: text})
	evs := f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool {
		return xrecorder.Typed(evs) == text
	}, 2*waitX)
	if n := mappingChanges(evs); n != 2 {
		t.Errorf("%d keyboard mapping changes for %d distinct characters and %d spare keycodes, want 2", n, spare+10, spare)
	}
	f.assertNothingDown(t)
}

// TestRobotgoInputClickWaitsForFrozenPointer: a client holding a
// synchronous button grab (as a window manager's click-to-focus binding
// does) freezes the pointer after the press; the click must not end before
// the grab lets it through, so text typed next comes after it.
func TestRobotgoInputClickWaitsForFrozenPointer(t *testing.T) {
	f := startX(t)
	conn, err := xgb.NewConnDisplay(f.display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	err = xproto.GrabButtonChecked(conn, false, root, xproto.EventMaskButtonPress|xproto.EventMaskButtonRelease,
		xproto.GrabModeSync, xproto.GrabModeAsync, 0, 0, xproto.ButtonIndex1, xproto.ModMaskAny).Check()
	if err != nil {
		t.Fatal(err)
	}
	var replayed atomic.Bool
	go func() {
		for {
			ev, err := conn.WaitForEvent()
			if ev == nil && err == nil {
				return // closed
			}
			if p, ok := ev.(xproto.ButtonPressEvent); ok {
				time.Sleep(300 * time.Millisecond) // a busy window manager
				replayed.Store(true)
				xproto.AllowEvents(conn, xproto.AllowReplayPointer, p.Time)
				conn.Sync()
			}
		}
	}()

	f.do(t, actions.Action{Type: actions.Click, X: 120, Y: 80})
	if !replayed.Load() {
		t.Error("the click ended while the pointer was still frozen")
	}
	f.do(t, actions.Action{Type: actions.TypeText, Text: "x"})
	evs := f.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(ofKind(evs, xrecorder.KeyRelease)) == 1 }, waitX)
	var order []string
	for _, e := range evs {
		switch e.Kind {
		case xrecorder.ButtonPress, xrecorder.ButtonRelease, xrecorder.KeyPress:
			order = append(order, e.Kind.String())
			if e.Kind == xrecorder.KeyPress && e.State&xrecorder.Button1Mask != 0 {
				t.Errorf("key pressed with button 1 still down (state 0x%x)", e.State)
			}
			if e.Kind == xrecorder.ButtonRelease && (e.X != 120 || e.Y != 80) {
				t.Errorf("release at %d,%d, want 120,80", e.X, e.Y)
			}
		}
	}
	if want := "[ButtonPress ButtonRelease KeyPress]"; fmt.Sprint(order) != want {
		t.Errorf("events %v, want %s", order, want)
	}
}
