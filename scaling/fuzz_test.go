package scaling

import (
	"errors"
	"testing"
)

// FuzzToScreen feeds arbitrary transforms (as if received over the wire) and
// points: nothing panics, an invalid transform or a point outside the image
// is an error, and every accepted point lands inside the crop and maps back
// into the image.
func FuzzToScreen(f *testing.F) {
	f.Add(1440, 900, 0, 0, 1440, 900, 1280, 800, 640, 400)
	f.Fuzz(func(t *testing.T, sw, sh, cx, cy, cw, ch, iw, ih, x, y int) {
		tr := Transform{Size{sw, sh}, Rect{cx, cy, cw, ch}, Size{iw, ih}}
		sx, sy, err := tr.ToScreen(x, y)
		if vErr := tr.Validate(); vErr != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("invalid transform %+v accepted: %v", tr, err)
			}
			return
		}
		inside := x >= 0 && y >= 0 && x < iw && y < ih
		if !inside {
			if !errors.Is(err, ErrOutOfBounds) {
				t.Fatalf("point (%d, %d) outside %d×%d: got %v", x, y, iw, ih, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%+v ToScreen(%d, %d): %v", tr, x, y, err)
		}
		if sx < cx || sy < cy || sx >= cx+cw || sy >= cy+ch {
			t.Fatalf("%+v: (%d, %d) → (%d, %d) outside the crop", tr, x, y, sx, sy)
		}
		ix, iy, err := tr.ToImage(sx, sy)
		if err != nil || ix < 0 || iy < 0 || ix >= iw || iy >= ih {
			t.Fatalf("%+v: back to image (%d, %d), %v", tr, ix, iy, err)
		}
	})
}

// FuzzNew checks that New either fails with ErrInvalid or returns a valid
// transform honouring its arguments.
func FuzzNew(f *testing.F) {
	f.Add(1440, 900, false, 0, 0, 0, 0, 1280, 800, true)
	f.Fuzz(func(t *testing.T, sw, sh int, hasCrop bool, cx, cy, cw, ch, w, h int, fit bool) {
		var crop *Rect
		if hasCrop {
			crop = &Rect{cx, cy, cw, ch}
		}
		tr, err := New(Size{sw, sh}, crop, w, h, fit)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if err := tr.Validate(); err != nil {
			t.Fatalf("New returned an invalid transform: %v", err)
		}
		if crop != nil && tr.Crop != *crop {
			t.Fatalf("crop %+v became %+v", *crop, tr.Crop)
		}
		bw, bh := w, h
		if bw == 0 {
			bw = tr.Crop.W
		}
		if bh == 0 {
			bh = tr.Crop.H
		}
		switch {
		case !fit && (tr.Image != Size{bw, bh}):
			t.Fatalf("exact size %d×%d became %+v", bw, bh, tr.Image)
		case fit && (tr.Image.W > min(bw, tr.Crop.W) || tr.Image.H > min(bh, tr.Crop.H)):
			t.Fatalf("fit %+v in %d×%d gave %+v", tr.Crop, bw, bh, tr.Image)
		case fit && tr.Image.W != min(bw, tr.Crop.W) && tr.Image.H != min(bh, tr.Crop.H):
			t.Fatalf("fit %+v in %d×%d touches no bound: %+v", tr.Crop, bw, bh, tr.Image)
		}
	})
}
