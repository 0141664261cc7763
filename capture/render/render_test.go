package render

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"testing"

	"github.com/agentd-dev/agentd/internal/testimage"
	"github.com/agentd-dev/agentd/scaling"
)

// version is a Frames whose version the test sets.
type version uint64

func (v *version) FrameVersion() uint64 { return uint64(*v) }

func view(t *testing.T, w, h int) scaling.Transform {
	t.Helper()
	tr, err := scaling.New(scaling.Size{W: 320, H: 200}, nil, w, h, true)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// decode returns the PNG's pixels.
func decode(t *testing.T, data []byte) *image.RGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewRGBA(img.Bounds())
	for y := range out.Rect.Dy() {
		for x := range out.Rect.Dx() {
			out.Set(x, y, img.At(x, y))
		}
	}
	return out
}

func render(t *testing.T, r *Renderer, src *image.RGBA, tr scaling.Transform) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Render(&buf, src, tr); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRenderReusesTheLastPNG: the same frame version in the same view gives
// the PNG made before, without reading the image (a different image given
// with the same version proves it); a new version or another view renders
// the image given.
func TestRenderReusesTheLastPNG(t *testing.T) {
	a := testimage.Desktop(320, 200)
	b := testimage.Desktop(320, 200)
	for i := range b.Pix {
		if i%4 != 3 {
			b.Pix[i] = 255 - b.Pix[i]
		}
	}
	native, small := view(t, 0, 0), view(t, 160, 100)
	v := version(1)
	r := &Renderer{Frames: &v}

	first := render(t, r, a, native)
	if !bytes.Equal(decode(t, first).Pix, a.Pix) {
		t.Fatal("the first PNG is not the image")
	}
	if got := render(t, r, b, native); !bytes.Equal(got, first) {
		t.Fatal("same version, same view: not the PNG made before")
	}
	v = 2
	if got := decode(t, render(t, r, b, native)); !bytes.Equal(got.Pix, b.Pix) {
		t.Fatal("a new version was not rendered")
	}
	ofB := render(t, r, b, small)
	if got := decode(t, ofB); got.Rect.Dx() != 160 {
		t.Fatalf("another view was not rendered: %v", got.Rect)
	}
	if got := render(t, r, a, small); !bytes.Equal(got, ofB) {
		t.Fatal("same version, same small view: not the PNG made before")
	}

	var plain Renderer // no Frames: every call renders
	render(t, &plain, a, native)
	if got := decode(t, render(t, &plain, b, native)); !bytes.Equal(got.Pix, b.Pix) {
		t.Fatal("a Renderer without Frames reused a PNG")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRenderAfterAFailure: a failed render or write leaves no PNG that a
// later call could take for the frame's.
func TestRenderAfterAFailure(t *testing.T) {
	a := testimage.Desktop(320, 200)
	v := version(1)
	r := &Renderer{Frames: &v}
	if err := r.Render(failWriter{}, a, view(t, 0, 0)); err == nil {
		t.Fatal("a write error was not reported")
	}
	bad := view(t, 0, 0)
	bad.Screen.W = 321 // not the source's size
	if err := r.Render(&bytes.Buffer{}, a, bad); err == nil {
		t.Fatal("a transform of another screen was accepted")
	}
	if got := decode(t, render(t, r, a, view(t, 0, 0))); !bytes.Equal(got.Pix, a.Pix) {
		t.Fatal("not the image after a failure")
	}
}
