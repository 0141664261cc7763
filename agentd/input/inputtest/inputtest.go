// Package inputtest is the conformance suite of input.Device: every
// implementation (the recording fake, XTEST on a real X server) runs the same
// cases and must show the same outcome at its display, so the fake the
// executor's tests rely on cannot drift from the device agentd drives.
package inputtest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/input"
)

// Display is what a device's display shows, as the suite asks it.
type Display interface {
	// Held lists the keys and buttons the display has down, as
	// "key:KEYSYM" and "button:NAME" (left, middle, right), sorted. Keys
	// are named as in KeyNames.
	Held(t testing.TB) []string
	// Pointer is where the pointer is.
	Pointer(t testing.TB) (x, y int)
	// Typed waits until the display has received exactly want as typed
	// text since the device was opened, failing t if it does not.
	Typed(t testing.TB, want string)
}

// Opener opens a fresh device on a w×h screen for one case, and the display
// it drives; the device is closed by the case or, if not, by its cleanup.
type Opener func(t *testing.T) (input.Device, Display)

// KeyNames are the keysyms the suite presses.
var KeyNames = []string{"Shift_L", "Control_L", "a"}

// Width and Height are the screen size the opener must give.
const (
	Width  = 320
	Height = 200
)

var (
	shift = actions.Key{Keysym: "Shift_L", Modifier: true}
	ctrl  = actions.Key{Keysym: "Control_L", Modifier: true}
	keyA  = actions.Key{Keysym: "a"}
)

// Run runs every case against the devices open makes.
func Run(t *testing.T, open Opener) {
	t.Run("screen size", func(t *testing.T) {
		in, _ := open(t)
		w, h, err := in.ScreenSize()
		if err != nil || w != Width || h != Height {
			t.Fatalf("ScreenSize = %d×%d, %v; want %d×%d", w, h, err, Width, Height)
		}
	})

	t.Run("move puts the pointer there", func(t *testing.T) {
		in, d := open(t)
		for _, p := range [][2]int{{10, 20}, {0, 0}, {Width - 1, Height - 1}} {
			must(t, in.MoveTo(p[0], p[1]))
			if x, y := d.Pointer(t); x != p[0] || y != p[1] {
				t.Fatalf("pointer at (%d,%d) after MoveTo(%d,%d)", x, y, p[0], p[1])
			}
		}
	})

	t.Run("keys go down and up", func(t *testing.T) {
		in, d := open(t)
		must(t, in.KeyDown(shift))
		must(t, in.KeyDown(ctrl))
		held(t, d, "key:Control_L", "key:Shift_L")
		must(t, in.KeyUp(shift))
		held(t, d, "key:Control_L")
		must(t, in.KeyUp(ctrl))
		held(t, d)
	})

	t.Run("a key already down is refused", func(t *testing.T) {
		in, d := open(t)
		must(t, in.KeyDown(keyA))
		if err := in.KeyDown(keyA); err == nil {
			t.Fatal("a second KeyDown of a held key succeeded")
		}
		held(t, d, "key:a")
		// It went down once, so one release lets it go.
		must(t, in.KeyUp(keyA))
		held(t, d)
	})

	t.Run("releasing a key not held does nothing", func(t *testing.T) {
		in, d := open(t)
		must(t, in.KeyUp(shift))
		held(t, d)
	})

	t.Run("buttons go down and up", func(t *testing.T) {
		in, d := open(t)
		must(t, in.MoveTo(50, 50))
		for _, b := range []actions.Button{actions.Left, actions.Middle, actions.Right} {
			must(t, in.ButtonDown(b))
			held(t, d, "button:"+string(b))
			must(t, in.ButtonUp(b))
			held(t, d)
		}
		// Back and forward have no state bit at the display; they must
		// still press and release without error.
		for _, b := range []actions.Button{actions.Back, actions.Forward} {
			must(t, in.ButtonDown(b))
			must(t, in.ButtonUp(b))
		}
		held(t, d)
	})

	t.Run("the wheel leaves nothing down", func(t *testing.T) {
		in, d := open(t)
		must(t, in.MoveTo(50, 50))
		must(t, in.Wheel(0, 2))
		must(t, in.Wheel(-1, -1))
		held(t, d)
	})

	t.Run("text is typed as given", func(t *testing.T) {
		in, d := open(t)
		text := "aB é✓\n\tz"
		must(t, in.PrepareText(context.Background(), text))
		for _, r := range text {
			must(t, in.TypeRune(r))
		}
		d.Typed(t, text)
		held(t, d)
	})

	t.Run("preparing text after cancellation fails", func(t *testing.T) {
		in, d := open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := in.PrepareText(ctx, "abc"); !errors.Is(err, context.Canceled) {
			t.Fatalf("PrepareText with a cancelled context: %v", err)
		}
		d.Typed(t, "")
	})

	t.Run("close releases what is held and ends the device", func(t *testing.T) {
		in, d := open(t)
		must(t, in.MoveTo(50, 50))
		must(t, in.KeyDown(shift))
		must(t, in.ButtonDown(actions.Left))
		held(t, d, "button:left", "key:Shift_L")
		must(t, in.Close())
		held(t, d)
		if err := in.MoveTo(1, 1); !errors.Is(err, input.ErrClosed) {
			t.Fatalf("MoveTo after Close: %v, want ErrClosed", err)
		}
		if err := in.KeyDown(shift); !errors.Is(err, input.ErrClosed) {
			t.Fatalf("KeyDown after Close: %v, want ErrClosed", err)
		}
		if err := in.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func held(t *testing.T, d Display, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := d.Held(t); !slices.Equal(got, want) {
		t.Fatalf("held at the display: %q, want %q", got, want)
	}
}
