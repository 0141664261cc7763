// Package scaling maps between screen space and the image space the model
// sees: crop first, then scale (docs/design.md, "Coordinates"). A point outside the image is an
// error, never clamped.
//
// Mapping rules (all integer arithmetic, so host and guest agree exactly):
//
//   - ToScreen maps image pixel i to the screen pixel that contains the centre
//     of i's footprint: screen = crop.origin + ⌈(i+½)·crop.size/image.size⌉ − 1.
//     When the centre falls exactly on a pixel boundary (an even downscale) the
//     lower pixel is taken, so a 800×600 image of a 1600×1200 screen maps
//     (10, 10) to (20, 20): "doubles both coordinates".
//   - ToImage maps screen pixel s to the image pixel whose footprint contains
//     the centre of s: image = ⌊(s−crop.origin+½)·image.size/crop.size⌋.
//
// Hence screen→image→screen lands within one scaled pixel of the start (exact
// when the image is not smaller than the crop), and image→screen→image is
// exact whenever the image is not larger than the crop.
package scaling

import (
	"errors"
	"fmt"
)

// Size is a width and height in pixels.
type Size struct {
	W int `json:"width"`
	H int `json:"height"`
}

// Rect is a rectangle in screen pixels.
type Rect struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"width"`
	H int `json:"height"`
}

// Transform is how one screenshot was made from the screen: the part of the
// screen (Crop) scaled to Image. screen = crop.origin + image_point × crop.size / image.size.
type Transform struct {
	Screen Size `json:"screen"`
	Crop   Rect `json:"crop"`
	Image  Size `json:"image"`
}

// Limits on sizes. MaxSide is the X11 protocol's own limit (coordinates are
// int16); MaxImagePixels bounds the memory an image request may ask for
// (256 MiB as RGBA) while still allowing native captures of very large screens.
const (
	MaxSide        = 32767
	MaxImagePixels = 1 << 26
)

// ErrInvalid is wrapped by every error about a malformed view or transform.
var ErrInvalid = errors.New("invalid transform")

// ErrOutOfBounds is wrapped by every error about a point outside the image
// (ToScreen) or outside the crop (ToImage).
var ErrOutOfBounds = errors.New("point out of bounds")

// New returns the transform for showing crop (nil: the whole screen) of a
// screen of the given size as an image bounded by width×height, where a zero
// width or height means the crop's own width or height.
//
// With fit, the image keeps the crop's aspect ratio and is the largest that
// fits within width×height without enlarging the crop: fit only ever
// shrinks, because enlarging adds no information and costs the model tokens
// (1440×900 in 1280×800 gives 1280×800, 1920×1080 gives 1280×720, 800×600
// gives 800×600). Without fit the image is exactly width×height, which may
// stretch or enlarge the crop; use that to zoom deliberately.
func New(screen Size, crop *Rect, width, height int, fit bool) (Transform, error) {
	if err := checkSize("screen", screen); err != nil {
		return Transform{}, err
	}
	c := Rect{W: screen.W, H: screen.H}
	if crop != nil {
		c = *crop
		if err := checkCrop(screen, c); err != nil {
			return Transform{}, err
		}
	}
	if width < 0 || height < 0 {
		return Transform{}, fmt.Errorf("%w: negative image size %d×%d", ErrInvalid, width, height)
	}
	if width == 0 {
		width = c.W
	}
	if height == 0 {
		height = c.H
	}
	img := Size{W: width, H: height}
	if fit {
		img = fitWithin(c.W, c.H, width, height)
	}
	t := Transform{Screen: screen, Crop: c, Image: img}
	if err := t.Validate(); err != nil {
		return Transform{}, err
	}
	return t, nil
}

// fitWithin is the largest size with the aspect ratio of w×h (rounded to the
// nearest pixel, at least 1) that fits within maxW×maxH and not beyond w×h.
func fitWithin(w, h, maxW, maxH int) Size {
	if w <= maxW && h <= maxH {
		return Size{W: w, H: h}
	}
	W, H, MW, MH := int64(w), int64(h), int64(maxW), int64(maxH)
	if MW*H <= MH*W { // width is the tighter bound
		return Size{W: maxW, H: max(1, int((2*H*MW+W)/(2*W)))}
	}
	return Size{W: max(1, int((2*W*MH+H)/(2*H))), H: maxH}
}

func checkSize(what string, s Size) error {
	if s.W <= 0 || s.H <= 0 {
		return fmt.Errorf("%w: %s size %d×%d is empty", ErrInvalid, what, s.W, s.H)
	}
	if s.W > MaxSide || s.H > MaxSide {
		return fmt.Errorf("%w: %s size %d×%d exceeds %d pixels a side", ErrInvalid, what, s.W, s.H, MaxSide)
	}
	return nil
}

func checkCrop(screen Size, c Rect) error {
	if c.W <= 0 || c.H <= 0 {
		return fmt.Errorf("%w: crop %d×%d at (%d, %d) is empty", ErrInvalid, c.W, c.H, c.X, c.Y)
	}
	// Compared as differences so huge values cannot overflow.
	if c.X < 0 || c.Y < 0 || c.W > screen.W-c.X || c.H > screen.H-c.Y {
		return fmt.Errorf("%w: crop %d×%d at (%d, %d) is not inside the %d×%d screen",
			ErrInvalid, c.W, c.H, c.X, c.Y, screen.W, screen.H)
	}
	return nil
}

// Validate checks a transform, e.g. one received over the wire: a non-empty
// screen, a non-empty crop inside it, and an image within the size limits.
func (t Transform) Validate() error {
	if err := checkSize("screen", t.Screen); err != nil {
		return err
	}
	if err := checkCrop(t.Screen, t.Crop); err != nil {
		return err
	}
	if err := checkSize("image", t.Image); err != nil {
		return err
	}
	if int64(t.Image.W)*int64(t.Image.H) > MaxImagePixels {
		return fmt.Errorf("%w: image %d×%d exceeds %d pixels", ErrInvalid, t.Image.W, t.Image.H, MaxImagePixels)
	}
	return nil
}

// Identity reports whether the image is the whole screen at native size, so
// image and screen coordinates coincide and no pixel needs to be touched.
func (t Transform) Identity() bool {
	return t.Crop == Rect{W: t.Screen.W, H: t.Screen.H} && t.Image == t.Screen
}

// ToScreen maps a point of the image to the screen pixel it designates (see
// the package comment for the rounding). A point outside the image is an
// error wrapping ErrOutOfBounds; so is any use of an invalid transform
// (ErrInvalid).
func (t Transform) ToScreen(x, y int) (int, int, error) {
	if err := t.Validate(); err != nil {
		return 0, 0, err
	}
	if x < 0 || y < 0 || x >= t.Image.W || y >= t.Image.H {
		return 0, 0, fmt.Errorf("%w: (%d, %d) is outside the %d×%d image", ErrOutOfBounds, x, y, t.Image.W, t.Image.H)
	}
	return t.Crop.X + toScreen1(x, t.Crop.W, t.Image.W), t.Crop.Y + toScreen1(y, t.Crop.H, t.Image.H), nil
}

// ToImage maps a screen pixel to the image pixel that shows it. A point
// outside the crop is an error wrapping ErrOutOfBounds.
func (t Transform) ToImage(sx, sy int) (int, int, error) {
	if err := t.Validate(); err != nil {
		return 0, 0, err
	}
	u, v := sx-t.Crop.X, sy-t.Crop.Y
	if sx < t.Crop.X || sy < t.Crop.Y || u >= t.Crop.W || v >= t.Crop.H {
		return 0, 0, fmt.Errorf("%w: screen point (%d, %d) is outside the crop %d×%d at (%d, %d)",
			ErrOutOfBounds, sx, sy, t.Crop.W, t.Crop.H, t.Crop.X, t.Crop.Y)
	}
	return toImage1(u, t.Crop.W, t.Image.W), toImage1(v, t.Crop.H, t.Image.H), nil
}

// toScreen1 is ⌈(i+½)·c/n⌉ − 1 for 0 ≤ i < n, in [0, c). int64 keeps the
// products exact on 32-bit platforms too.
func toScreen1(i, c, n int) int {
	return int(((2*int64(i)+1)*int64(c) - 1) / (2 * int64(n)))
}

// toImage1 is ⌊(u+½)·n/c⌋ for 0 ≤ u < c, in [0, n).
func toImage1(u, c, n int) int {
	return int((2*int64(u) + 1) * int64(n) / (2 * int64(c)))
}
