package scaling

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNew: a case with an error wants it, whether or not New fits, unless
// it has a width: fit shrinks to the crop, so a large bound is fine with it.
func TestNew(t *testing.T) {
	scr := Size{W: 1440, H: 900}
	cases := []struct {
		name   string
		screen Size
		crop   *Rect
		w, h   int
		fit    bool
		want   Transform
		err    string
	}{
		{"native", scr, nil, 0, 0, false, Transform{scr, Rect{0, 0, 1440, 900}, scr}, ""},
		{"fit same aspect", scr, nil, 1280, 800, true, Transform{scr, Rect{0, 0, 1440, 900}, Size{1280, 800}}, ""},
		{"fit 16:9", Size{1920, 1080}, nil, 1280, 800, true, Transform{Size{1920, 1080}, Rect{0, 0, 1920, 1080}, Size{1280, 720}}, ""},
		{"fit height bound", Size{1000, 1000}, nil, 1280, 800, true, Transform{Size{1000, 1000}, Rect{0, 0, 1000, 1000}, Size{800, 800}}, ""},
		{"fit never enlarges", Size{800, 600}, nil, 1280, 800, true, Transform{Size{800, 600}, Rect{0, 0, 800, 600}, Size{800, 600}}, ""},
		{"fit width only", scr, nil, 720, 0, true, Transform{scr, Rect{0, 0, 1440, 900}, Size{720, 450}}, ""},
		{"fit rounds", Size{1001, 333}, nil, 500, 500, true, Transform{Size{1001, 333}, Rect{0, 0, 1001, 333}, Size{500, 166}}, ""},
		{"fit tiny keeps a pixel", Size{10000, 10}, nil, 100, 100, true, Transform{Size{10000, 10}, Rect{0, 0, 10000, 10}, Size{100, 1}}, ""},
		{"exact stretches", scr, nil, 1000, 1000, false, Transform{scr, Rect{0, 0, 1440, 900}, Size{1000, 1000}}, ""},
		{"exact enlarges", scr, &Rect{10, 20, 100, 50}, 400, 200, false, Transform{scr, Rect{10, 20, 100, 50}, Size{400, 200}}, ""},
		{"crop native", scr, &Rect{100, 50, 640, 480}, 0, 0, false, Transform{scr, Rect{100, 50, 640, 480}, Size{640, 480}}, ""},
		{"crop whole screen", scr, &Rect{0, 0, 1440, 900}, 0, 0, true, Transform{scr, Rect{0, 0, 1440, 900}, scr}, ""},
		{"crop to bottom right pixel", scr, &Rect{1439, 899, 1, 1}, 0, 0, false, Transform{scr, Rect{1439, 899, 1, 1}, Size{1, 1}}, ""},

		{"empty screen", Size{0, 900}, nil, 0, 0, false, Transform{}, "screen size 0×900 is empty"},
		{"negative screen", Size{-1, -1}, nil, 0, 0, false, Transform{}, "screen size -1×-1 is empty"},
		{"huge screen", Size{40000, 900}, nil, 0, 0, false, Transform{}, "exceeds 32767"},
		{"empty crop", scr, &Rect{10, 10, 0, 5}, 0, 0, false, Transform{}, "crop 0×5 at (10, 10) is empty"},
		{"negative crop size", scr, &Rect{10, 10, -5, 5}, 0, 0, false, Transform{}, "is empty"},
		{"crop left of screen", scr, &Rect{-1, 0, 10, 10}, 0, 0, false, Transform{}, "not inside the 1440×900 screen"},
		{"crop past right", scr, &Rect{1431, 0, 10, 10}, 0, 0, false, Transform{}, "crop 10×10 at (1431, 0) is not inside"},
		{"crop past bottom", scr, &Rect{0, 800, 10, 101}, 0, 0, false, Transform{}, "not inside"},
		{"crop overflow", scr, &Rect{math.MaxInt, 0, math.MaxInt, 10}, 0, 0, false, Transform{}, "not inside"},
		{"negative width", scr, nil, -1, 10, false, Transform{}, "negative image size -1×10"},
		{"image too large", scr, nil, 32768, 10, false, Transform{}, "image size 32768×10 exceeds"},
		{"image too many pixels", scr, nil, 30000, 30000, false, Transform{}, "exceeds 67108864 pixels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err == "" {
				got, err := New(c.screen, c.crop, c.w, c.h, c.fit)
				if err != nil || got != c.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
				}
				return
			}
			for _, fit := range []bool{false, true} {
				if fit && c.w > 0 {
					continue
				}
				_, err := New(c.screen, c.crop, c.w, c.h, fit)
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("fit=%v: got %v, want an ErrInvalid containing %q", fit, err, c.err)
				}
			}
		})
	}
}

func TestSpecExamples(t *testing.T) {
	// docs/design.md, "Coordinates": a 800×600 image of a 1600×1200 screen doubles both coordinates;
	// a crop at (100, 50) adds (100, 50) after scaling.
	tr, err := New(Size{1600, 1200}, nil, 800, 600, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]int{{0, 0}, {10, 10}, {399, 300}, {799, 599}} {
		x, y, err := tr.ToScreen(p[0], p[1])
		if err != nil || x != 2*p[0] || y != 2*p[1] {
			t.Fatalf("ToScreen%v = %d, %d, %v; want doubled", p, x, y, err)
		}
	}
	tr, err = New(Size{1600, 1200}, &Rect{100, 50, 1000, 800}, 500, 400, false)
	if err != nil {
		t.Fatal(err)
	}
	if x, y, err := tr.ToScreen(10, 20); err != nil || x != 120 || y != 90 {
		t.Fatalf("crop: got %d, %d, %v; want 120, 90", x, y, err)
	}
	// Identity and crop at native size map one to one.
	tr, _ = New(Size{1440, 900}, &Rect{7, 9, 100, 100}, 0, 0, false)
	if x, y, err := tr.ToScreen(0, 99); err != nil || x != 7 || y != 108 {
		t.Fatalf("native crop: %d, %d, %v", x, y, err)
	}
	// A 3× downscale maps to the centre pixel of each 3×3 block.
	tr, _ = New(Size{900, 900}, nil, 300, 300, false)
	if x, y, _ := tr.ToScreen(0, 299); x != 1 || y != 898 {
		t.Fatalf("3x: %d, %d", x, y)
	}
}

func TestOutOfBounds(t *testing.T) {
	tr, err := New(Size{1440, 900}, &Rect{100, 50, 640, 480}, 320, 240, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]int{{-1, 0}, {0, -1}, {320, 0}, {0, 240}, {math.MaxInt, 0}, {math.MinInt, 0}} {
		_, _, err := tr.ToScreen(p[0], p[1])
		if !errors.Is(err, ErrOutOfBounds) || !strings.Contains(err.Error(), "320×240 image") {
			t.Fatalf("ToScreen%v: %v", p, err)
		}
	}
	if _, _, err := tr.ToScreen(-1, 5); err == nil || !strings.Contains(err.Error(), "(-1, 5)") {
		t.Fatalf("error should name the point: %v", err)
	}
	for _, p := range [][2]int{{99, 50}, {100, 49}, {740, 50}, {100, 530}} {
		if _, _, err := tr.ToImage(p[0], p[1]); !errors.Is(err, ErrOutOfBounds) || !strings.Contains(err.Error(), "crop 640×480 at (100, 50)") {
			t.Fatalf("ToImage%v: %v", p, err)
		}
	}
	var zero Transform
	if _, _, err := zero.ToScreen(0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero transform: %v", err)
	}
}

func TestValidate(t *testing.T) {
	good := Transform{Size{1440, 900}, Rect{0, 0, 1440, 900}, Size{1280, 800}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Transform{
		{},
		{Size{1440, 900}, Rect{0, 0, 1441, 900}, Size{1280, 800}},
		{Size{1440, 900}, Rect{0, 0, 1440, 900}, Size{0, 800}},
		{Size{1440, 900}, Rect{0, 0, 1440, 900}, Size{32767, 32767}},
	}
	for _, tr := range bad {
		if err := tr.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", tr, err)
		}
	}
}

func TestJSON(t *testing.T) {
	tr := Transform{Size{1440, 900}, Rect{1, 2, 3, 4}, Size{5, 6}}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"screen":{"width":1440,"height":900},"crop":{"x":1,"y":2,"width":3,"height":4},"image":{"width":5,"height":6}}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
}

// randomTransform draws a valid transform with sizes from tiny to large and
// both shrinking and enlarging scales.
func randomTransform(r *rand.Rand) Transform {
	side := func(limit int) int {
		if r.IntN(4) == 0 {
			return 1 + r.IntN(min(limit, 8))
		}
		return 1 + r.IntN(limit)
	}
	scr := Size{side(4000), side(4000)}
	cw, ch := side(scr.W), side(scr.H)
	crop := Rect{r.IntN(scr.W - cw + 1), r.IntN(scr.H - ch + 1), cw, ch}
	tr, err := New(scr, &crop, side(2*cw), side(2*ch), r.IntN(2) == 0)
	if err != nil {
		panic(err)
	}
	return tr
}

// TestRoundTrip checks the round-trip property of docs/design.md, "Coordinates": screen → image → screen lands
// within one scaled pixel of the start, exactly when the image is not
// smaller than the crop; and image → screen → image is exact when the image
// is not larger than the crop.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		tr := randomTransform(r)
		for range 50 {
			sx := tr.Crop.X + r.IntN(tr.Crop.W)
			sy := tr.Crop.Y + r.IntN(tr.Crop.H)
			ix, iy, err := tr.ToImage(sx, sy)
			if err != nil {
				t.Fatalf("%+v ToImage(%d, %d): %v", tr, sx, sy, err)
			}
			bx, by, err := tr.ToScreen(ix, iy)
			if err != nil {
				t.Fatalf("%+v ToScreen(%d, %d): %v", tr, ix, iy, err)
			}
			checkWithinScaledPixel(t, tr, "x", sx, bx, tr.Crop.W, tr.Image.W)
			checkWithinScaledPixel(t, tr, "y", sy, by, tr.Crop.H, tr.Image.H)

			px, py := r.IntN(tr.Image.W), r.IntN(tr.Image.H)
			sx, sy, err = tr.ToScreen(px, py)
			if err != nil {
				t.Fatal(err)
			}
			if sx < tr.Crop.X || sx >= tr.Crop.X+tr.Crop.W || sy < tr.Crop.Y || sy >= tr.Crop.Y+tr.Crop.H {
				t.Fatalf("%+v: image (%d, %d) → screen (%d, %d) outside the crop", tr, px, py, sx, sy)
			}
			qx, qy, err := tr.ToImage(sx, sy)
			if err != nil {
				t.Fatal(err)
			}
			if (tr.Image.W <= tr.Crop.W && qx != px) || (tr.Image.H <= tr.Crop.H && qy != py) {
				t.Fatalf("%+v: image (%d, %d) → screen (%d, %d) → image (%d, %d)", tr, px, py, sx, sy, qx, qy)
			}
		}
	}
}

// checkWithinScaledPixel: |back-start| < crop/image (one scaled pixel), and 0
// when the image has at least as many pixels as the crop.
func checkWithinScaledPixel(t *testing.T, tr Transform, axis string, start, back, c, n int) {
	t.Helper()
	d := back - start
	if d < 0 {
		d = -d
	}
	if (n >= c && d != 0) || (n < c && d*n >= c) {
		t.Fatalf("%+v: %s %d came back as %d (crop %d, image %d)", tr, axis, start, back, c, n)
	}
}

// TestToScreenCoversCentre checks the documented rounding on every pixel of
// a few awkward scales: the chosen screen pixel contains the image pixel's
// centre (the lower one on a boundary).
func TestToScreenCoversCentre(t *testing.T) {
	for _, c := range [][2]int{{1440, 1280}, {900, 800}, {1600, 800}, {7, 3}, {3, 7}, {1, 5}, {5, 1}, {1920, 1280}} {
		crop, img := c[0], c[1]
		tr := Transform{Size{crop, 1}, Rect{0, 0, crop, 1}, Size{img, 1}}
		for i := range img {
			s, _, err := tr.ToScreen(i, 0)
			if err != nil {
				t.Fatal(err)
			}
			// centre = (i+½)·crop/img; want s < centre ≤ s+1, i.e. 2·img·s < (2i+1)·crop ≤ 2·img·(s+1).
			lhs, mid, rhs := 2*img*s, (2*i+1)*crop, 2*img*(s+1)
			if !(lhs < mid && mid <= rhs) {
				t.Fatalf("crop %d image %d: pixel %d → %d does not contain the centre", crop, img, i, s)
			}
		}
	}
}
