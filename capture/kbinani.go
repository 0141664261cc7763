//go:build linux

package capture

import (
	"fmt"
	"image"
	"os"

	"github.com/kbinani/screenshot"
)

// openKbinani selects the kbinani fallback. The library always connects to
// $DISPLAY, so it can only serve the display named there; changing the
// process environment behind other code's back (the input driver reads it
// too) would be worse than refusing.
func (c *Capturer) openKbinani() error {
	if c.cursor {
		return fmt.Errorf("capture: kbinani cannot draw the pointer")
	}
	if env := os.Getenv("DISPLAY"); env != c.display {
		return fmt.Errorf("capture: kbinani captures $DISPLAY (%q), not %q", env, c.display)
	}
	img, err := kbinaniGrab()
	if err != nil {
		return err
	}
	c.method.Store(MethodKbinani)
	c.setSize(img.Rect.Dx(), img.Rect.Dy())
	return nil
}

// captureKbinani returns a fresh image: kbinani allocates one (and opens a
// new connection and a new SHM segment) per frame.
func (c *Capturer) captureKbinani() (*image.RGBA, error) {
	img, err := kbinaniGrab()
	if err != nil {
		return nil, err
	}
	c.img = img
	c.setSize(img.Rect.Dx(), img.Rect.Dy())
	return img, nil
}

// kbinaniGrab captures the union of all monitors, i.e. the whole root window
// like the X11 path, with its top-left corner at (0, 0).
func kbinaniGrab() (*image.RGBA, error) {
	n := screenshot.NumActiveDisplays()
	if n == 0 {
		return nil, fmt.Errorf("capture: kbinani finds no display on %q (needs XINERAMA): %w",
			os.Getenv("DISPLAY"), ErrUnavailable)
	}
	var r image.Rectangle
	for i := range n {
		r = r.Union(screenshot.GetDisplayBounds(i))
	}
	if r.Empty() {
		return nil, fmt.Errorf("capture: kbinani reports empty display bounds: %w", ErrUnavailable)
	}
	img, err := screenshot.CaptureRect(r)
	if err != nil {
		return nil, fmt.Errorf("capture: kbinani: %w (%w)", ErrUnavailable, err)
	}
	return img, nil
}
