package probe

import (
	"image"
	"image/color"
)

// DesktopMode, as the probe's first argument followed by the screen's width
// and height, makes it the bench's desktop instead: one X client whose
// window covers the screen with a realistic, reproducible picture and
// reports every key, button and motion event it receives, one DesktopMsg
// per line on stdout. A "change" line on stdin flips the target; the end of
// stdin closes the window.
const DesktopMode = "desktop"

// The effect target's two colours: a click inside it swaps them, so every
// click changes the screen.
var (
	TargetColor = color.RGBA{0, 96, 223, 255}
	FlipColor   = color.RGBA{230, 120, 20, 255}
)

// ChangeLine is the request, on the desktop's stdin, to flip the target.
const ChangeLine = "change"

// DesktopMsg is one line from the desktop.
type DesktopMsg struct {
	// Target is set once, on the first line, when the window shows and has
	// the focus: the rectangle a click flips.
	Target *image.Rectangle `json:"target,omitempty"`
	Event  *Event           `json:"event,omitempty"`
	// Changed answers a ChangeLine once the server has drawn the flip.
	Changed bool `json:"changed,omitempty"`
	// Flipped is whether the target shows FlipColor after this message.
	Flipped bool `json:"flipped,omitempty"`
	// Err is an X error (the desktop goes on) or why it could not start.
	Err string `json:"err,omitempty"`
}

// Event kinds.
const (
	KeyPress      = "key-press"
	KeyRelease    = "key-release"
	ButtonPress   = "button-press"
	ButtonRelease = "button-release"
	Motion        = "motion"
)

// Event is one input event the desktop received.
type Event struct {
	Kind   string `json:"kind"`
	X      int    `json:"x"` // root coordinates
	Y      int    `json:"y"`
	Detail int    `json:"detail,omitempty"` // button number, or keycode
	Char   rune   `json:"char,omitempty"`   // the character a key press types, 0 if none
	// Seen is when the desktop received it, in Unix nanoseconds: the bench's
	// guest is on the bench's machine, so both read the same clock.
	Seen int64 `json:"seen"`
}
