package actions

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Input is the keyboard and mouse of one display, at the level of single
// presses and releases. The Executor builds every action out of these calls
// and tracks what it pressed, so an Input needs no notion of actions.
//
// Buttons are the normalised ones of ParseButton (Left, Right, Middle, Back,
// Forward); keys are parsed keys (see ParseKey). An Input is used by one
// goroutine at a time.
type Input interface {
	// ScreenSize is the size of the screen in pixels.
	ScreenSize() (w, h int, err error)
	// MoveTo puts the pointer at (x, y) at once (no smooth movement).
	MoveTo(x, y int) error
	// ButtonDown and ButtonUp press and release a mouse button: X buttons
	// 1 (left), 2 (middle), 3 (right), 8 (back), 9 (forward). ButtonUp
	// returns once the release has taken effect: a window manager's
	// click-to-focus binding can hold the pointer frozen after a press, and
	// key events or pointer moves sent meanwhile would overtake the click.
	ButtonDown(b Button) error
	ButtonUp(b Button) error
	// Wheel turns the wheel by whole steps: +y is down (X button 5), -y up
	// (4), +x right (7), -x left (6).
	Wheel(stepsX, stepsY int) error
	// KeyDown and KeyUp press and release the key that produces k.Keysym.
	KeyDown(k Key) error
	KeyUp(k Key) error
	// PrepareText readies the keyboard for typing text with TypeRune, one
	// rune after the other: characters the keyboard layout lacks are added
	// to it at once (as many as it has room for), and if that changed the
	// layout it waits until the applications have caught up, or ctx ends.
	// Typing without it works, with one layout change per missing
	// character.
	PrepareText(ctx context.Context, text string) error
	// TypeRune types one character of text: '\n' and '\r' are Return, '\t'
	// is Tab, any other rune is typed as that character whatever the
	// keyboard layout.
	TypeRune(r rune) error
	// Close releases the Input's resources.
	Close() error
}

// ErrDisplayLost is wrapped by the errors of an Input whose display went
// away (the X server exited or restarted). What was pressed went with it;
// the next call reconnects, and fails the same way while the display is
// still gone.
var ErrDisplayLost = errors.New("X display lost")

// Call is one recorded call on a FakeInput.
type Call struct {
	Op     string // the method name, e.g. "KeyDown"
	X, Y   int    // MoveTo's point, Wheel's steps
	Button Button // ButtonDown, ButtonUp
	Key    string // KeyDown, KeyUp: the keysym name
	Rune   rune   // TypeRune
	Text   string // PrepareText
}

// String is a compact form for table tests, e.g. "MoveTo(3,4)",
// "KeyDown(Control_L)", "PrepareText("né")", "TypeRune('é')".
func (c Call) String() string {
	switch c.Op {
	case "MoveTo", "Wheel":
		return fmt.Sprintf("%s(%d,%d)", c.Op, c.X, c.Y)
	case "ButtonDown", "ButtonUp":
		return fmt.Sprintf("%s(%s)", c.Op, c.Button)
	case "KeyDown", "KeyUp":
		return fmt.Sprintf("%s(%s)", c.Op, c.Key)
	case "TypeRune":
		return fmt.Sprintf("%s(%q)", c.Op, c.Rune)
	case "PrepareText":
		return fmt.Sprintf("%s(%q)", c.Op, c.Text)
	}
	return c.Op
}

// ErrFakeFailure is what a FakeInput returns from the call it was told to
// fail, unless another error was given.
var ErrFakeFailure = errors.New("fake input failure")

// FakeInput is an Input that records every call in order, for tests of
// anything built on Input. It can be told to fail a given call, and to run a
// hook on every call (e.g. to cancel a context half-way through an action).
// It is safe for concurrent use.
type FakeInput struct {
	mu    sync.Mutex
	w, h  int
	calls []Call
	fail  map[int]error // by 1-based call index
	hook  func(n int, c Call)
}

// NewFakeInput returns a FakeInput with a w×h screen.
func NewFakeInput(w, h int) *FakeInput { return &FakeInput{w: w, h: h} }

// FailAt makes the n-th call from now (1-based, counted over all methods,
// ScreenSize included) fail with err, or ErrFakeFailure if err is nil. The
// failed call is still recorded. Several calls can be set to fail.
func (f *FakeInput) FailAt(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		err = ErrFakeFailure
	}
	if f.fail == nil {
		f.fail = map[int]error{}
	}
	f.fail[len(f.calls)+n] = err
}

// OnCall sets a hook run after each call is recorded, with the call's
// 1-based index; nil removes it. The hook must not call the FakeInput.
func (f *FakeInput) OnCall(hook func(n int, c Call)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// Calls returns a copy of the calls so far.
func (f *FakeInput) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Strings returns the calls so far in their String form.
func (f *FakeInput) Strings() []string {
	calls := f.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

// Reset forgets the recorded calls and any pending failures.
func (f *FakeInput) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.fail = nil, nil
}

// Down lists the keys and buttons pressed and not released, in the order
// they went down, as "key:NAME" and "button:NAME". A press that failed counts
// as a press: the caller cannot know it did not reach the display.
func (f *FakeInput) Down() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var down []string
	remove := func(s string) {
		for i := len(down) - 1; i >= 0; i-- {
			if down[i] == s {
				down = append(down[:i], down[i+1:]...)
				return
			}
		}
	}
	for _, c := range f.calls {
		switch c.Op {
		case "KeyDown":
			down = append(down, "key:"+c.Key)
		case "KeyUp":
			remove("key:" + c.Key)
		case "ButtonDown":
			down = append(down, "button:"+string(c.Button))
		case "ButtonUp":
			remove("button:" + string(c.Button))
		}
	}
	return down
}

func (f *FakeInput) record(c Call) error {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	n := len(f.calls)
	var err error
	if ferr, ok := f.fail[n]; ok {
		err = fmt.Errorf("%s: %w", c.Op, ferr)
	}
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook(n, c)
	}
	return err
}

// ScreenSize implements Input.
func (f *FakeInput) ScreenSize() (int, int, error) {
	if err := f.record(Call{Op: "ScreenSize"}); err != nil {
		return 0, 0, err
	}
	return f.w, f.h, nil
}

// MoveTo implements Input.
func (f *FakeInput) MoveTo(x, y int) error { return f.record(Call{Op: "MoveTo", X: x, Y: y}) }

// ButtonDown implements Input.
func (f *FakeInput) ButtonDown(b Button) error { return f.record(Call{Op: "ButtonDown", Button: b}) }

// ButtonUp implements Input.
func (f *FakeInput) ButtonUp(b Button) error { return f.record(Call{Op: "ButtonUp", Button: b}) }

// Wheel implements Input.
func (f *FakeInput) Wheel(stepsX, stepsY int) error {
	return f.record(Call{Op: "Wheel", X: stepsX, Y: stepsY})
}

// KeyDown implements Input.
func (f *FakeInput) KeyDown(k Key) error { return f.record(Call{Op: "KeyDown", Key: k.Keysym}) }

// KeyUp implements Input.
func (f *FakeInput) KeyUp(k Key) error { return f.record(Call{Op: "KeyUp", Key: k.Keysym}) }

// PrepareText implements Input. It fails with ctx's error if ctx has
// ended, after recording the call.
func (f *FakeInput) PrepareText(ctx context.Context, text string) error {
	if err := f.record(Call{Op: "PrepareText", Text: text}); err != nil {
		return err
	}
	return ctx.Err()
}

// TypeRune implements Input.
func (f *FakeInput) TypeRune(r rune) error { return f.record(Call{Op: "TypeRune", Rune: r}) }

// Close implements Input.
func (f *FakeInput) Close() error { return f.record(Call{Op: "Close"}) }
