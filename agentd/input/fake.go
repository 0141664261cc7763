package input

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentd-dev/agentd/actions"
)

// Call is one recorded call on a Fake.
type Call struct {
	Op     string         // the method name, e.g. "KeyDown"
	X, Y   int            // MoveTo's point, Wheel's steps
	Button actions.Button // ButtonDown, ButtonUp
	Key    string         // KeyDown, KeyUp: the keysym name
	Rune   rune           // TypeRune
	Text   string         // PrepareText
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

var _ Device = (*Fake)(nil)

// ErrFakeFailure is what a Fake returns from the call it was told to
// fail, unless another error was given.
var ErrFakeFailure = errors.New("fake input failure")

// Fake is a Device that records every call in order, for tests of
// anything built on Device. It can be told to fail a given call, and to run a
// hook on every call (e.g. to cancel a context half-way through an action).
// It keeps the Device contract as a display would (inputtest checks it). It
// is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	w, h   int
	calls  []Call
	fail   map[int]error // by 1-based call index
	hook   func(n int, c Call)
	closed bool
}

// NewFake returns a Fake with a w×h screen.
func NewFake(w, h int) *Fake { return &Fake{w: w, h: h} }

// FailAt makes the n-th call from now (1-based, counted over all methods,
// ScreenSize included) fail with err, or ErrFakeFailure if err is nil. The
// failed call is still recorded. Several calls can be set to fail.
func (f *Fake) FailAt(n int, err error) {
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
// 1-based index; nil removes it. The hook must not call the Fake.
func (f *Fake) OnCall(hook func(n int, c Call)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// Calls returns a copy of the calls so far.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Strings returns the calls so far in their String form.
func (f *Fake) Strings() []string {
	calls := f.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

// Reset forgets the recorded calls and any pending failures.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.fail = nil, nil
}

// Down lists the keys and buttons pressed and not released, in the order
// they went down, as "key:NAME" and "button:NAME". A press that failed counts
// as a press: the caller cannot know it did not reach the display.
func (f *Fake) Down() []string {
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
		case "Close":
			down = nil
		case "KeyDown":
			if !slices.Contains(down, "key:"+c.Key) { // a second press is refused
				down = append(down, "key:"+c.Key)
			}
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

func (f *Fake) record(c Call) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		if c.Op == "Close" {
			return nil
		}
		return fmt.Errorf("%s: %w", c.Op, ErrClosed)
	}
	f.calls = append(f.calls, c)
	n := len(f.calls)
	var err error
	if ferr, ok := f.fail[n]; ok {
		err = fmt.Errorf("%s: %w", c.Op, ferr)
	}
	f.closed = c.Op == "Close"
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook(n, c)
	}
	return err
}

// ScreenSize implements Device.
func (f *Fake) ScreenSize() (int, int, error) {
	if err := f.record(Call{Op: "ScreenSize"}); err != nil {
		return 0, 0, err
	}
	return f.w, f.h, nil
}

// MoveTo implements Device.
func (f *Fake) MoveTo(x, y int) error { return f.record(Call{Op: "MoveTo", X: x, Y: y}) }

// ButtonDown implements Device.
func (f *Fake) ButtonDown(b actions.Button) error { return f.record(Call{Op: "ButtonDown", Button: b}) }

// ButtonUp implements Device.
func (f *Fake) ButtonUp(b actions.Button) error { return f.record(Call{Op: "ButtonUp", Button: b}) }

// Wheel implements Device.
func (f *Fake) Wheel(stepsX, stepsY int) error {
	return f.record(Call{Op: "Wheel", X: stepsX, Y: stepsY})
}

// KeyDown implements Device: a key already down is refused, as a real
// display refuses it.
func (f *Fake) KeyDown(k actions.Key) error {
	held := slices.Contains(f.Down(), "key:"+k.Keysym)
	if err := f.record(Call{Op: "KeyDown", Key: k.Keysym}); err != nil {
		return err
	}
	if held {
		return fmt.Errorf("key %s is already down", k.Keysym)
	}
	return nil
}

// KeyUp implements Device.
func (f *Fake) KeyUp(k actions.Key) error { return f.record(Call{Op: "KeyUp", Key: k.Keysym}) }

// PrepareText implements Device. It fails with ctx's error if ctx has
// ended, after recording the call.
func (f *Fake) PrepareText(ctx context.Context, text string) error {
	if err := f.record(Call{Op: "PrepareText", Text: text}); err != nil {
		return err
	}
	return ctx.Err()
}

// TypeRune implements Device.
func (f *Fake) TypeRune(r rune) error { return f.record(Call{Op: "TypeRune", Rune: r}) }

// Close implements Device: what was held is released, and later calls
// fail (they are not recorded).
func (f *Fake) Close() error { return f.record(Call{Op: "Close"}) }
