//go:build linux

package codeexec_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/xrecorder"
)

// buttons lists the button events among evs as "press 1 at 100,200".
func buttons(evs []xrecorder.Event) []string {
	var out []string
	for _, e := range evs {
		switch e.Kind {
		case xrecorder.ButtonPress:
			out = append(out, fmt.Sprintf("press %d at %d,%d", e.Button, e.X, e.Y))
		case xrecorder.ButtonRelease:
			out = append(out, fmt.Sprintf("release %d at %d,%d", e.Button, e.X, e.Y))
		}
	}
	return out
}

// TestPyautoguiLandsExactly: each pyautogui function, run by a real python3
// worker under the real agentd, reaches the X server as the events it
// stands for, at the exact pixels, with the right buttons, modifiers, text
// and scroll directions.
func TestPyautoguiLandsExactly(t *testing.T) {
	d := newDesk(t)
	d.run(t, "pyautogui.PAUSE = 0")
	cases := []struct {
		name, code string
		buttons    []string
	}{
		{"click", "pyautogui.click(100, 200)", []string{"press 1 at 100,200", "release 1 at 100,200"}},
		{"click a tuple, a float", "pyautogui.click((130.7, 230))", []string{"press 1 at 130,230", "release 1 at 130,230"}},
		{"rightClick", "pyautogui.rightClick(110, 210)", []string{"press 3 at 110,210", "release 3 at 110,210"}},
		{"middleClick", "pyautogui.middleClick(111, 211)", []string{"press 2 at 111,211", "release 2 at 111,211"}},
		{"click clicks button", "pyautogui.click(120, 220, clicks=2, interval=0.01, button='right')",
			[]string{"press 3 at 120,220", "release 3 at 120,220", "press 3 at 120,220", "release 3 at 120,220"}},
		{"doubleClick", "pyautogui.doubleClick(140, 240)",
			[]string{"press 1 at 140,240", "release 1 at 140,240", "press 1 at 140,240", "release 1 at 140,240"}},
		{"tripleClick", "pyautogui.tripleClick(150, 250)",
			[]string{"press 1 at 150,250", "release 1 at 150,250", "press 1 at 150,250", "release 1 at 150,250", "press 1 at 150,250", "release 1 at 150,250"}},
		{"moveTo, click where the pointer is", "pyautogui.moveTo(300, 310)\npyautogui.click()", []string{"press 1 at 300,310", "release 1 at 300,310"}},
		{"moveRel", "pyautogui.moveTo(300, 300)\npyautogui.moveRel(5, -7)\npyautogui.click()", []string{"press 1 at 305,293", "release 1 at 305,293"}},
		{"move", "pyautogui.moveTo(300, 300)\npyautogui.move(-5, 7)\npyautogui.click()", []string{"press 1 at 295,307", "release 1 at 295,307"}},
		{"dragTo", "pyautogui.moveTo(400, 400)\npyautogui.dragTo(450, 420)", []string{"press 1 at 400,400", "release 1 at 450,420"}},
		{"dragRel", "pyautogui.moveTo(400, 400)\npyautogui.dragRel(-30, 25)", []string{"press 1 at 400,400", "release 1 at 370,425"}},
		{"dragTo right button", "pyautogui.moveTo(410, 410)\npyautogui.dragTo(460, 430, button='right')", []string{"press 3 at 410,410", "release 3 at 460,430"}},
		{"mouseDown, mouseUp", "pyautogui.mouseDown(500, 500)\npyautogui.moveTo(520, 510)\npyautogui.mouseUp()", []string{"press 1 at 500,500", "release 1 at 520,510"}},
		{"scroll up", "pyautogui.scroll(3, x=600, y=610)", []string{"press 4 at 600,610", "release 4 at 600,610", "press 4 at 600,610", "release 4 at 600,610", "press 4 at 600,610", "release 4 at 600,610"}},
		{"scroll down", "pyautogui.scroll(-2, 601, 611)", []string{"press 5 at 601,611", "release 5 at 601,611", "press 5 at 601,611", "release 5 at 601,611"}},
		{"hscroll right", "pyautogui.hscroll(1, x=602, y=612)", []string{"press 7 at 602,612", "release 7 at 602,612"}},
		{"hscroll left", "pyautogui.hscroll(-1, x=603, y=613)", []string{"press 6 at 603,613", "release 6 at 603,613"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d.rec.Clear()
			d.run(t, c.code)
			d.rec.Sync(t)
			if got := buttons(d.rec.Events()); !reflect.DeepEqual(got, c.buttons) {
				t.Fatalf("%s:\n got %q\nwant %q", c.code, got, c.buttons)
			}
		})
	}

	t.Run("modifiers held by keyDown and hold", func(t *testing.T) {
		d.rec.Clear()
		d.run(t, "pyautogui.keyDown('shift')\npyautogui.click(700, 700)\npyautogui.keyUp('shift')\n"+
			"with pyautogui.hold(['ctrl', 'alt']):\n    pyautogui.rightClick(710, 710)\npyautogui.click(720, 720)")
		d.rec.Sync(t)
		var states []uint16
		for _, e := range d.rec.Events() {
			if e.Kind == xrecorder.ButtonPress {
				states = append(states, e.State&(xrecorder.ShiftMask|xrecorder.ControlMask|xrecorder.Mod1Mask))
			}
		}
		want := []uint16{xrecorder.ShiftMask, xrecorder.ControlMask | xrecorder.Mod1Mask, 0}
		if !reflect.DeepEqual(states, want) {
			t.Fatalf("modifier states at the presses %v, want %v", states, want)
		}
		if keys, mask := d.rec.Down(t); len(keys) != 0 || mask != 0 {
			t.Fatalf("left down: keys %v mask %#x", keys, mask)
		}
	})

	t.Run("typing", func(t *testing.T) {
		d.rec.Clear()
		d.run(t, "pyautogui.write('Héllo wörld ✓ 你好')\npyautogui.typewrite(['a', 'B', 'enter'])\n"+
			"pyautogui.press('A')\npyautogui.press(['b', 'tab'], presses=2)\npyautogui.write('xy', interval=0.01)\npyautogui.press('space')")
		d.rec.WaitTyped(t, "Héllo wörld ✓ 你好aB\nAb\tb\txy ", 10e9)
	})

	t.Run("hotkey", func(t *testing.T) {
		d.rec.Clear()
		d.run(t, "pyautogui.hotkey('ctrl', 'shift', 'k')\npyautogui.hotkey('alt', 'f4', interval=0.01)")
		d.rec.Sync(t)
		var got []string
		for _, e := range d.rec.Events() {
			if e.Kind == xrecorder.KeyPress && (e.Keysym == 'k' || e.Keysym == 'K' || e.Keysym == 0xffc1) {
				got = append(got, fmt.Sprintf("%#x state %#x", e.Keysym, e.State&(xrecorder.ShiftMask|xrecorder.ControlMask|xrecorder.Mod1Mask)))
			}
		}
		want := []string{fmt.Sprintf("%#x state %#x", 'K', xrecorder.ShiftMask|xrecorder.ControlMask), fmt.Sprintf("%#x state %#x", 0xffc1, xrecorder.Mod1Mask)}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("hotkey presses %q, want %q", got, want)
		}
	})

	t.Run("queries", func(t *testing.T) {
		res := d.run(t, "pyautogui.moveTo(12, 34)\nprint(pyautogui.size(), pyautogui.position(), pyautogui.onScreen(1439, 899), pyautogui.onScreen(1440, 0))")
		if want := "Size(width=1440, height=900) Point(x=12, y=34) True False\n"; res.Output != want {
			t.Fatalf("output %q, want %q", res.Output, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for code, want := range map[string]string{
			"pyautogui.click(1440, 10)":                 "OutOfScreenError: (1440, 10) is outside the 1440×900 screen",
			"pyautogui.click(-1, 10)":                   "OutOfScreenError",
			"pyautogui.press('nosuchkey')":              "ValueError: unknown key name 'nosuchkey'",
			"pyautogui.press('yen')":                    "has no key on agentd's keyboard",
			"pyautogui.locateOnScreen('x.png')":         "NotAvailableError: pyautogui.locateOnScreen is not available",
			"pyautogui.click('button.png')":             "NotAvailableError: locating an image",
			"pyautogui.click(10, 10, button='x')":       "ValueError: button must be",
			"pyautogui.screenshot(region=(0,0,1441,1))": "OutOfScreenError: region",
		} {
			res := d.exec(t, code, 0)
			if !strings.Contains(res.Traceback, want) {
				t.Errorf("%s: traceback %q, want it to contain %q", code, res.Traceback, want)
			}
		}
	})
}

// TestPyautoguiNamesScriptsUse: the names of pyautogui's own API list and
// tests that scripts use, on the real worker and X server: every tween runs
// from 0 to 1 and a tweened move steps along its line to land exactly on
// its target; write presses Backspace, Enter and Tab for \b, \n and \t;
// isShiftCharacter, getPointOnLine and center answer as pyautogui's do;
// onScreen refuses what is not a point with PyAutoGUIException; pause= is
// taken everywhere.
func TestPyautoguiNamesScriptsUse(t *testing.T) {
	d := newDesk(t)
	d.run(t, "pyautogui.PAUSE = 0")

	t.Run("tweens", func(t *testing.T) {
		res := d.run(t, `names = """linear easeInQuad easeOutQuad easeInOutQuad easeInCubic easeOutCubic easeInOutCubic
easeInQuart easeOutQuart easeInOutQuart easeInQuint easeOutQuint easeInOutQuint easeInSine easeOutSine easeInOutSine
easeInExpo easeOutExpo easeInOutExpo easeInCirc easeOutCirc easeInOutCirc easeInElastic easeOutElastic
easeInOutElastic easeInBack easeOutBack easeInOutBack easeInBounce easeOutBounce easeInOutBounce""".split()
bad = [n for n in names if getattr(pyautogui, n)(0) != 0 or getattr(pyautogui, n)(1) != 1]
print(len(names), bad, round(pyautogui.easeInOutQuad(0.25), 6), round(pyautogui.easeOutBounce(0.5), 6),
      round(pyautogui.easeOutElastic(0.1), 6), round(pyautogui.easeInBack(0.5), 6))`)
		if want := "31 [] 0.125 0.765625 1.25 -0.087698\n"; res.Output != want {
			t.Fatalf("tweens: output %q, want %q", res.Output, want)
		}
	})

	t.Run("tweened moves land exactly", func(t *testing.T) {
		d.rec.Clear()
		d.run(t, "pyautogui.moveTo(100, 100)\npyautogui.moveTo(500, 300, duration=0.3, tween=pyautogui.easeInOutQuad)\n"+
			"pyautogui.click()\npyautogui.moveTo(700, 100)\npyautogui.dragTo(900, 200, 0.3, pyautogui.easeOutBack)")
		d.rec.Sync(t)
		evs := d.rec.Events()
		if got, want := buttons(evs), []string{"press 1 at 500,300", "release 1 at 500,300", "press 1 at 700,100", "release 1 at 900,200"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("buttons %q, want %q", got, want)
		}
		// The move from 100,100 passes points on its line (y = x/2 + 50),
		// not one jump.
		between := 0
		for _, e := range evs {
			if e.Kind == xrecorder.Motion && e.X > 100 && e.X < 500 {
				if off := 2*e.Y - e.X - 100; off < -2 || off > 2 {
					t.Fatalf("the tweened move left its line at %d,%d", e.X, e.Y)
				}
				between++
			}
		}
		if between < 3 {
			t.Fatalf("the tweened move passed %d points between its ends, want steps: %v", between, evs)
		}
	})

	t.Run("write presses Backspace, Enter and Tab", func(t *testing.T) {
		d.rec.Clear()
		d.run(t, `pyautogui.write('a\bb\n\t')`)
		d.rec.Sync(t)
		var got []string
		for _, e := range d.rec.Events() {
			if e.Kind == xrecorder.KeyPress {
				got = append(got, fmt.Sprintf("%#x", e.Keysym))
			}
		}
		if want := []string{"0x61", "0xff08", "0x62", "0xff0d", "0xff09"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("key presses %v, want a, BackSpace, b, Return, Tab %v", got, want)
		}
	})

	t.Run("helpers", func(t *testing.T) {
		res := d.run(t, "print(pyautogui.isShiftCharacter('A'), pyautogui.isShiftCharacter('a'), pyautogui.isShiftCharacter('?'), "+
			"pyautogui.getPointOnLine(0, 0, 10, 20, 0.25), pyautogui.center((10, 20, 30, 41)), "+
			"pyautogui.onScreen((1439, 899)), pyautogui.onScreen([1440, 0]), pyautogui.onScreen(pyautogui.Point(5, 5)))\n"+
			"pyautogui.moveTo(5, 6, pause=0.01)\npyautogui.press('shift', pause=0)\nprint(pyautogui.position())")
		if want := "True False True (2.5, 5.0) Point(x=25, y=40) True False True\nPoint(x=5, y=6)\n"; res.Output != want {
			t.Fatalf("output %q, want %q", res.Output, want)
		}
		for _, bad := range []string{"'bad'", "0", "[0, 0], 0", "(1, 2, 3)"} {
			res := d.run(t, "try:\n    pyautogui.onScreen("+bad+")\n    print('no error')\nexcept pyautogui.PyAutoGUIException as e:\n    print(type(e).__name__)")
			if res.Output == "no error\n" {
				t.Errorf("onScreen(%s) raised no PyAutoGUIException", bad)
			}
		}
	})
}
