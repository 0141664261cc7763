// Package input is the keyboard and mouse of one display as single presses
// and releases: the Device interface the executor builds every action from,
// and Fake, a recording Device for tests. The X implementation, which needs
// cgo, is package input/xtest; inputtest holds the conformance suite both
// pass, so the fake cannot drift from the real thing.
package input

import (
	"context"
	"errors"

	"github.com/agentd-dev/agentd/actions"
)

// Device is the keyboard and mouse of one display, at the level of single
// presses and releases. The executor builds every action out of these calls
// and tracks what it pressed, so a Device needs no notion of actions.
//
// Buttons are the normalised ones of actions.ParseButton (Left, Right,
// Middle, Back, Forward); keys are parsed keys (see actions.ParseKey). A
// Device is used by one goroutine at a time.
type Device interface {
	// ScreenSize is the size of the screen in pixels.
	ScreenSize() (w, h int, err error)
	// MoveTo puts the pointer at (x, y) at once (no smooth movement).
	MoveTo(x, y int) error
	// ButtonDown and ButtonUp press and release a mouse button: X buttons
	// 1 (left), 2 (middle), 3 (right), 8 (back), 9 (forward). ButtonUp
	// returns once the release has taken effect: a window manager's
	// click-to-focus binding can hold the pointer frozen after a press, and
	// key events or pointer moves sent meanwhile would overtake the click.
	ButtonDown(b actions.Button) error
	ButtonUp(b actions.Button) error
	// Wheel turns the wheel by whole steps: +y is down (X button 5), -y up
	// (4), +x right (7), -x left (6).
	Wheel(stepsX, stepsY int) error
	// KeyDown and KeyUp press and release the key that produces k.Keysym.
	// KeyDown of a key this Device already holds is an error (a key cannot
	// go down twice); KeyUp of a key it does not hold does nothing: it was
	// never pressed, or something else pressed it.
	KeyDown(k actions.Key) error
	KeyUp(k actions.Key) error
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
	// Close releases every key and button the Device holds and its
	// resources; later calls fail with ErrClosed. Closing twice is a no-op.
	Close() error
}

// ErrDisplayLost is wrapped by the errors of a Device whose display went
// away (the X server exited or restarted). What was pressed went with it;
// the next call reconnects, and fails the same way while the display is
// still gone.
var ErrDisplayLost = errors.New("X display lost")

// ErrClosed is wrapped by the errors of every call after Close.
var ErrClosed = errors.New("input is closed")
