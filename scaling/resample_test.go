package scaling

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/disintegration/imaging"

	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/internal/testimage"
)

// blocks paints a screen of w×h as a grid of flat coloured 60×60 blocks, so
// the colour at a block's centre must survive any scale that keeps a block
// several output pixels wide.
func blocks(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, blockColour(x, y))
		}
	}
	return img
}

func blockColour(x, y int) color.RGBA {
	bx, by := x/60, y/60
	return color.RGBA{uint8(bx * 37), uint8(by * 53), uint8((bx + by) * 29), 0xff}
}

// noisy is a reproducible photo-like image: a gradient plus noise.
func noisy(w, h int, seed uint64) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, 7))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		p := i / 4
		x, y := p%w, p/w
		img.Pix[i] = uint8(x*255/max(w, 1)) ^ uint8(r.IntN(40))
		img.Pix[i+1] = uint8(y*255/max(h, 1)) ^ uint8(r.IntN(40))
		img.Pix[i+2] = uint8(r.IntN(256))
		img.Pix[i+3] = 0xff
	}
	return img
}

func TestScaleIdentityIsSource(t *testing.T) {
	src := blocks(320, 200)
	tr, _ := New(Size{320, 200}, nil, 0, 0, true)
	var s Scaler
	got, err := s.Scale(src, tr)
	if err != nil || got != src {
		t.Fatalf("identity: got %p, %v; want the source %p", got, err, src)
	}
}

func TestScaleCropNativeSharesPixels(t *testing.T) {
	src := blocks(320, 200)
	tr, _ := New(Size{320, 200}, &Rect{30, 40, 100, 50}, 0, 0, false)
	var s Scaler
	got, err := s.Scale(src, tr)
	if err != nil {
		t.Fatal(err)
	}
	if got.Bounds() != image.Rect(0, 0, 100, 50) {
		t.Fatalf("bounds %v", got.Bounds())
	}
	if &got.Pix[0] != &src.Pix[src.PixOffset(30, 40)] {
		t.Fatal("crop at native size copied the pixels")
	}
	for y := 0; y < 50; y++ {
		for x := 0; x < 100; x++ {
			if got.RGBAAt(x, y) != src.RGBAAt(30+x, 40+y) {
				t.Fatalf("(%d, %d): %v want %v", x, y, got.RGBAAt(x, y), src.RGBAAt(30+x, 40+y))
			}
		}
	}
}

// TestScaleFlatColours checks, for several views, that each block's colour
// is exact at points well inside it, reached through ToScreen.
func TestScaleFlatColours(t *testing.T) {
	const w, h = 960, 600
	src := blocks(w, h)
	views := []struct {
		crop   *Rect
		vw, vh int
		fit    bool
	}{
		{nil, 853, 533, true},
		{nil, 700, 600, false}, // width only
		{nil, 960, 500, false}, // height only
		{nil, 320, 200, true},
		{&Rect{300, 120, 600, 480}, 400, 0, true},
		{&Rect{300, 120, 240, 180}, 960, 720, false}, // zoom in
	}
	var s Scaler
	for _, v := range views {
		tr, err := New(Size{w, h}, v.crop, v.vw, v.vh, v.fit)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Scale(src, tr)
		if err != nil {
			t.Fatal(err)
		}
		if got.Bounds() != image.Rect(0, 0, tr.Image.W, tr.Image.H) {
			t.Fatalf("%+v: bounds %v", tr, got.Bounds())
		}
		checked := 0
		for iy := 0; iy < tr.Image.H; iy += 7 {
			for ix := 0; ix < tr.Image.W; ix += 7 {
				sx, sy, err := tr.ToScreen(ix, iy)
				if err != nil {
					t.Fatal(err)
				}
				// The kernel reaches 2 output pixels (≤ 2×scale screen pixels) each way.
				margin := 2*max(tr.Crop.W/tr.Image.W, 1) + 4
				if sx%60 < margin || sx%60 >= 60-margin || sy%60 < margin || sy%60 >= 60-margin {
					continue
				}
				checked++
				if c, want := got.RGBAAt(ix, iy), blockColour(sx, sy); c != want {
					t.Fatalf("%+v: image (%d, %d) → screen (%d, %d): %v, want %v", tr, ix, iy, sx, sy, c, want)
				}
			}
		}
		if checked < 100 {
			t.Fatalf("%+v: only %d points checked", tr, checked)
		}
	}
}

// filters are every Filter, each with a float reference of the same
// kernel: imaging's for Catmull-Rom and the tent (its Linear), and
// areaAverage for Area.
var filters = []struct {
	f   Filter
	ref func(src image.Image, w, h int) *image.NRGBA
}{
	{Nearest, nearestReference},
	{Area, areaAverage},
	{CatmullRom, func(src image.Image, w, h int) *image.NRGBA { return imaging.Resize(src, w, h, imaging.CatmullRom) }},
	{Triangle, func(src image.Image, w, h int) *image.NRGBA { return imaging.Resize(src, w, h, imaging.Linear) }},
}

// areaAverage resizes src to w×h in float64 (see resizeAxes): each output
// pixel is the mean of the source under its footprint, weighted by the part
// covered.
func areaAverage(src image.Image, w, h int) *image.NRGBA {
	return resizeAxes(src, w, h, func(c, n int) axisOutput {
		scale := float64(c) / float64(n)
		return func(i int, at func(u int) color.NRGBA) (acc [3]float64) {
			a, e := float64(i)*scale, float64(i+1)*scale
			for u := int(a); u < c && float64(u) < e; u++ {
				wt := (math.Min(e, float64(u+1)) - math.Max(a, float64(u))) / scale
				p := at(u)
				acc[0] += wt * float64(p.R)
				acc[1] += wt * float64(p.G)
				acc[2] += wt * float64(p.B)
			}
			return acc
		}
	})
}

// axisOutput computes output i of an axis from the source pixels at(u) of
// its row or column, unrounded.
type axisOutput func(i int, at func(u int) color.NRGBA) [3]float64

// resizeAxes resizes src to w×h in float64, one axis then the other, each
// pass rounded to bytes as the Scaler and imaging do; axis(c, n) computes
// the outputs of an axis of c source pixels and n outputs.
func resizeAxes(src image.Image, w, h int, axis func(c, n int) axisOutput) *image.NRGBA {
	pass := func(in *image.NRGBA, w, h int, horizontal bool) *image.NRGBA {
		out := image.NewNRGBA(image.Rect(0, 0, w, h))
		c, n := in.Rect.Dx(), w
		if !horizontal {
			c, n = in.Rect.Dy(), h
		}
		output := axis(c, n)
		var x, y int
		at := func(u int) color.NRGBA {
			if horizontal {
				return in.NRGBAAt(u, y)
			}
			return in.NRGBAAt(x, u)
		}
		for y = range h {
			for x = range w {
				i := x
				if !horizontal {
					i = y
				}
				v := output(i, at)
				out.SetNRGBA(x, y, color.NRGBA{uint8(math.Round(v[0])), uint8(math.Round(v[1])), uint8(math.Round(v[2])), 0xff})
			}
		}
		return out
	}
	in := imaging.Clone(src)
	return pass(pass(in, w, in.Rect.Dy(), true), w, h, false)
}

// nearestOwned returns, for each output of an axis of n pixels from c,
// the source pixels it averages under the Nearest filter, found by
// measuring overlaps (in units of 1/n pixel, so exactly): the pixel its
// centre falls in (ToScreen's), and each pixel no centre falls in goes to
// the output covering the most of it, the first on a tie.
func nearestOwned(c, n int) [][]int {
	owned := make([][]int, n)
	centre := make(map[int]bool)
	for i := range n {
		u := toScreen1(i, c, n)
		if !centre[u] {
			owned[i] = append(owned[i], u)
		}
		centre[u] = true
	}
	for u := range c {
		if centre[u] {
			continue
		}
		best, cover := -1, -1
		for i := range n { // footprint [i·c, (i+1)·c), pixel [u·n, (u+1)·n)
			if o := min((i+1)*c, (u+1)*n) - max(i*c, u*n); o > cover {
				best, cover = i, o
			}
		}
		owned[best] = append(owned[best], u)
	}
	for i := range owned {
		slices.Sort(owned[i])
	}
	return owned
}

// nearestReference resizes src to w×h with the Nearest filter in float64
// (see resizeAxes). An output owning no pixel (enlarging) shows the pixel
// its centre falls in.
func nearestReference(src image.Image, w, h int) *image.NRGBA {
	return resizeAxes(src, w, h, func(c, n int) axisOutput {
		owned := nearestOwned(c, n)
		return func(i int, at func(u int) color.NRGBA) (acc [3]float64) {
			us := owned[i]
			if len(us) == 0 {
				us = []int{toScreen1(i, c, n)}
			}
			for _, u := range us {
				p := at(u)
				acc[0] += float64(p.R)
				acc[1] += float64(p.G)
				acc[2] += float64(p.B)
			}
			k := float64(len(us))
			return [3]float64{acc[0] / k, acc[1] / k, acc[2] / k}
		}
	})
}

// TestNearestShowsTheScreenPixel checks the Nearest filter's promise
// exactly, on noise: an output pixel that owns one source pixel on each
// axis is the screen pixel ToScreen maps it to, unchanged; the others
// include it in their mean. At 1440×900 → 1280×800 that is 7 of 8 columns
// and rows.
func TestNearestShowsTheScreenPixel(t *testing.T) {
	for _, v := range []struct{ sw, sh, w, h int }{{1440, 900, 1280, 800}, {1920, 1080, 1280, 720}, {1366, 768, 1280, 720}, {300, 200, 299, 131}} {
		src := noisy(v.sw, v.sh, 5)
		tr, err := New(Size{v.sw, v.sh}, nil, v.w, v.h, false)
		if err != nil {
			t.Fatal(err)
		}
		s := Scaler{Filter: Nearest}
		got, err := s.Scale(src, tr)
		if err != nil {
			t.Fatal(err)
		}
		ox, oy := nearestOwned(v.sw, v.w), nearestOwned(v.sh, v.h)
		exact := 0
		for y := range v.h {
			for x := range v.w {
				sx, sy, err := tr.ToScreen(x, y)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(ox[x], sx) || !slices.Contains(oy[y], sy) {
					t.Fatalf("%+v: (%d, %d) does not average the screen pixel (%d, %d) it maps to", v, x, y, sx, sy)
				}
				if len(ox[x]) == 1 && len(oy[y]) == 1 {
					exact++
					if g, w := got.RGBAAt(x, y), src.RGBAAt(sx, sy); g != w {
						t.Fatalf("%+v: (%d, %d) is %v, want the screen pixel (%d, %d) %v", v, x, y, g, sx, sy, w)
					}
				}
			}
		}
		if v.sw == 1440 && exact < v.w*v.h*3/4 {
			t.Fatalf("%+v: only %d of %d pixels are screen pixels", v, exact, v.w*v.h)
		}
	}
}

// TestScaleMatchesImaging compares each filter against its float reference
// for random views of small images: same kernel, so at most rounding
// differences.
func TestScaleMatchesImaging(t *testing.T) {
	for _, f := range filters {
		r := rand.New(rand.NewPCG(3, 4))
		s := Scaler{Filter: f.f}
		for i := range 300 {
			sw, sh := 1+r.IntN(120), 1+r.IntN(120)
			src := noisy(sw, sh, uint64(i))
			cw, ch := 1+r.IntN(sw), 1+r.IntN(sh)
			crop := Rect{r.IntN(sw - cw + 1), r.IntN(sh - ch + 1), cw, ch}
			tr, err := New(Size{sw, sh}, &crop, 1+r.IntN(150), 1+r.IntN(150), r.IntN(2) == 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Scale(src, tr)
			if err != nil {
				t.Fatal(err)
			}
			want := f.ref(imaging.Crop(src, image.Rect(crop.X, crop.Y, crop.X+cw, crop.Y+ch)), tr.Image.W, tr.Image.H)
			for y := 0; y < tr.Image.H; y++ {
				for x := 0; x < tr.Image.W; x++ {
					a, b := got.RGBAAt(x, y), want.NRGBAAt(x, y)
					if d := max(diff(a.R, b.R), diff(a.G, b.G), diff(a.B, b.B)); d > 2 || a.A != 0xff {
						t.Fatalf("%v, %+v at (%d, %d): %v vs reference %v", f.f, tr, x, y, a, b)
					}
				}
			}
		}
	}
}

func diff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func TestScaleSubImageSource(t *testing.T) {
	big := blocks(400, 300)
	src := big.SubImage(image.Rect(60, 60, 380, 260)).(*image.RGBA) // 320×200 at (60, 60)
	tr, _ := New(Size{320, 200}, &Rect{0, 0, 120, 120}, 60, 60, false)
	var s Scaler
	got, err := s.Scale(src, tr)
	if err != nil {
		t.Fatal(err)
	}
	if c, want := got.RGBAAt(15, 15), blockColour(90, 90); c != want {
		t.Fatalf("got %v want %v", c, want)
	}
}

func TestScaleErrors(t *testing.T) {
	var s Scaler
	tr, _ := New(Size{320, 200}, nil, 100, 100, false)
	if _, err := s.Scale(blocks(321, 200), tr); err == nil || !strings.Contains(err.Error(), "321×200") {
		t.Fatalf("wrong source size: %v", err)
	}
	if _, err := s.Scale(blocks(320, 200), Transform{}); err == nil {
		t.Fatal("zero transform accepted")
	}
}

func TestScaleExtremes(t *testing.T) {
	var s Scaler
	src := noisy(1440, 900, 1)
	for _, sz := range []Size{{1, 1}, {1440, 1}, {1, 900}, {3, 2000}} {
		tr, err := New(Size{1440, 900}, nil, sz.W, sz.H, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Scale(src, tr)
		if err != nil || got.Bounds().Size() != image.Pt(sz.W, sz.H) {
			t.Fatalf("%v: %v %v", sz, got.Bounds(), err)
		}
	}
}

func TestScaleNoAllocs(t *testing.T) {
	src := noisy(480, 300, 1)
	tr, _ := New(Size{480, 300}, nil, 427, 267, true)
	crop, _ := New(Size{480, 300}, &Rect{10, 10, 200, 200}, 0, 0, false)
	for _, workers := range []int{0, 1, 3} { // 0: as many as GOMAXPROCS allows
		s := Scaler{workers: workers}
		if _, err := s.Scale(src, tr); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(3, func() {
			_, _ = s.Scale(src, tr)
			_, _ = s.Scale(src, crop)
		})
		if allocs != 0 {
			t.Fatalf("%d workers: %v allocations per steady-state Scale", workers, allocs)
		}
	}
}

// TestScaleWorkersIdentical checks that the image does not depend on how the
// rows are split between workers: every output row is computed from the same
// source rows with the same arithmetic, whichever band it falls in.
func TestScaleWorkersIdentical(t *testing.T) {
	const w, h = 400, 250
	views := []struct {
		crop   *Rect
		vw, vh int
	}{
		{nil, 356, 222},                    // the daemon's mild downscale: 5 taps
		{nil, 400, 180},                    // height only
		{nil, 300, 250},                    // width only
		{&Rect{50, 40, 120, 80}, 480, 320}, // zoom in: 4 taps
		{nil, 130, 83},                     // 3× down: the generic loops
		{nil, 7, 250},
		{nil, 400, 3},
	}
	srcs := []*image.RGBA{testimage.Desktop(w, h), noisy(w, h, 5)}
	for _, f := range filters {
		workersIdentical(t, f.f, w, h, views, srcs)
	}

	// The daemon's view at full size, with the default number of workers.
	src := testimage.Desktop(1440, 900)
	tr, _ := New(Size{1440, 900}, nil, 1280, 800, true)
	one, all := Scaler{workers: 1}, Scaler{}
	want, _ := one.Scale(src, tr)
	got, _ := all.Scale(src, tr)
	if !bytes.Equal(got.Pix, want.Pix) {
		t.Fatalf("GOMAXPROCS=%d: the default workers give a different image from 1", runtime.GOMAXPROCS(0))
	}
}

func workersIdentical(t *testing.T, f Filter, w, h int, views []struct {
	crop   *Rect
	vw, vh int
}, srcs []*image.RGBA) {
	t.Helper()
	reused := Scaler{Filter: f} // one Scaler through every view, source and worker count
	for _, v := range views {
		tr, err := New(Size{w, h}, v.crop, v.vw, v.vh, false)
		if err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		for _, src := range srcs {
			one := Scaler{Filter: f, workers: 1}
			img, err := one.Scale(src, tr)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, img.Pix)
		}
		for _, workers := range []int{2, 3, 7} {
			s := Scaler{Filter: f, workers: workers}
			reused.workers = workers
			for i, src := range srcs {
				got, err := s.Scale(src, tr)
				if err != nil {
					t.Fatal(err)
				}
				again, err := reused.Scale(src, tr)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Pix, want[i]) || !bytes.Equal(again.Pix, want[i]) {
					t.Fatalf("%v, source %d, %+v: %d workers give a different image from 1", f, i, tr, workers)
				}
			}
		}
	}
}

// edited is noise in which most rows repeat the row above except for a
// random span, and some repeat it exactly, as on a screen.
func edited(w, h int, seed uint64) *image.RGBA {
	r := rand.New(rand.NewPCG(seed, 9))
	img := noisy(w, h, seed)
	for y := 1; y < h; y++ {
		if r.IntN(5) == 0 {
			continue // all new
		}
		row, above := img.Pix[y*img.Stride:y*img.Stride+w*4], img.Pix[(y-1)*img.Stride:(y-1)*img.Stride+w*4]
		copy(row, above)
		if r.IntN(3) > 0 {
			lo := r.IntN(w)
			hi := lo + 1 + r.IntN(min(w-lo, 1+r.IntN(w)))
			for i := lo * 4; i < hi*4; i += 4 {
				row[i], row[i+1], row[i+2] = uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256))
			}
		}
	}
	return img
}

// TestScaleReuseExact checks the shortcuts for rows and spans equal to the
// ones above (see band): the image is the same, bit for bit, as when every
// pixel is computed.
func TestScaleReuseExact(t *testing.T) {
	const w, h = 300, 200
	srcs := []*image.RGBA{edited(w, h, 1), edited(w, h, 2), testimage.Desktop(w, h), blocks(w, h)}
	views := []struct {
		crop   *Rect
		vw, vh int
	}{
		{nil, 267, 178}, {nil, 300, 150}, {nil, 250, 200}, {nil, 90, 61},
		{&Rect{40, 30, 100, 70}, 400, 280}, {&Rect{1, 1, 298, 198}, 250, 190}, {nil, 300, 1}, {nil, 1, 200},
	}
	for i, src := range srcs {
		for _, v := range views {
			tr, err := New(Size{w, h}, v.crop, v.vw, v.vh, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range filters {
				ref := Scaler{Filter: f.f, workers: 1, fresh: true}
				want, err := ref.Scale(src, tr)
				if err != nil {
					t.Fatal(err)
				}
				for _, workers := range []int{1, 4} {
					s := Scaler{Filter: f.f, workers: workers}
					got, err := s.Scale(src, tr)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got.Pix, want.Pix) {
						t.Fatalf("%v, source %d, %+v, %d workers: reusing rows changes the image", f.f, i, tr, workers)
					}
				}
			}
		}
	}
}

// TestScaleDesktopMatchesImaging checks legibility where it matters: the
// text-heavy desktop at the daemon's view is, pixel for pixel, within 2 per
// channel of each filter's float reference (the fixed-point weights are
// 12-bit).
func TestScaleDesktopMatchesImaging(t *testing.T) {
	src := testimage.Desktop(1440, 900)
	for _, f := range filters {
		for _, sz := range []Size{{1280, 800}, {640, 400}} {
			tr, _ := New(Size{1440, 900}, nil, sz.W, sz.H, false)
			s := Scaler{Filter: f.f}
			got, err := s.Scale(src, tr)
			if err != nil {
				t.Fatal(err)
			}
			want := f.ref(src, sz.W, sz.H)
			for i := 0; i < len(got.Pix); i += 4 {
				a, b := got.Pix[i:i+4], want.Pix[i:i+4]
				if d := max(diff(a[0], b[0]), diff(a[1], b[1]), diff(a[2], b[2])); d > 2 || a[3] != 0xff {
					p := i / 4
					t.Fatalf("%v, %v at (%d, %d): %v vs reference %v", f.f, sz, p%sz.W, p/sz.W, a, b)
				}
			}
		}
	}
}

// TestWeights checks the filter taps for every pair of sizes up to 100 and
// for common screens: each output's weights sum to exactly 1<<weightShift
// (so flat colours stay exact), stay inside the source, and have negative
// lobes small enough for the lanes (compute fails otherwise).
func TestWeights(t *testing.T) {
	check := func(src, dst int) {
		for _, f := range filters {
			checkWeights(t, src, dst, f.f)
		}
	}
	for src := 1; src <= 100; src++ {
		for dst := 1; dst <= 100; dst++ {
			check(src, dst)
		}
	}
	for _, p := range [][2]int{{1440, 1280}, {900, 800}, {1920, 1280}, {1080, 720}, {2560, 1280}, {3840, 1280}, {1366, 1280}, {768, 720}, {32767, 1}, {1, 32767}} {
		check(p[0], p[1])
	}
}

func checkWeights(t *testing.T, src, dst int, f Filter) {
	t.Helper()
	var ws weights
	if err := ws.compute(src, dst, f); err != nil {
		t.Fatal(err)
	}
	n := ws.taps
	if len(ws.px) != dst*(n+1) {
		t.Fatalf("%d → %d: %d words for %d taps", src, dst, len(ws.px), n)
	}
	for i := range dst {
		e := ws.px[i*(n+1) : (i+1)*(n+1)]
		var sum, neg int64
		for _, w := range e[1:] {
			sum += int64(w)
			neg += min(int64(w), 0)
		}
		if first := int(e[0]); first < 0 || first+n > src || sum != 1<<weightShift || -neg > maxNegWeight {
			t.Fatalf("%d → %d, output %d: first %d, %d taps, sum %d, negative %d", src, dst, i, first, n, sum, neg)
		}
	}
}

// BenchmarkScale compares our resampler with imaging (the first choice) at the
// daemon's typical view, on a worst case (noise, where no pixel is flat) and
// on typical content (desktop: text, flat areas, a photo). It runs as many
// workers as GOMAXPROCS: -cpu 1 times one core.
func BenchmarkScale(b *testing.B) {
	src := noisy(1440, 900, 1)
	draw.Draw(src, image.Rect(100, 100, 700, 500), image.NewUniform(color.RGBA{40, 40, 40, 255}), image.Point{}, draw.Src)
	desk := testimage.Desktop(1440, 900)
	tr, _ := New(Size{1440, 900}, nil, 1280, 800, true)
	own := func(src *image.RGBA, f Filter) func(b *testing.B) {
		return func(b *testing.B) {
			s := Scaler{Filter: f, Full: true} // the same source every time
			cputime.Loop(b, func() error {
				_, err := s.Scale(src, tr)
				return err
			})
		}
	}
	for _, f := range filters {
		b.Run("own-"+f.f.String(), own(src, f.f))
		b.Run("own-"+f.f.String()+"-desktop", own(desk, f.f))
	}
	for _, f := range []struct {
		name   string
		filter imaging.ResampleFilter
	}{{"catmullrom", imaging.CatmullRom}, {"linear", imaging.Linear}} {
		b.Run("imaging-"+f.name, func(b *testing.B) {
			cputime.Loop(b, func() error {
				imaging.Resize(src, 1280, 800, f.filter)
				return nil
			})
		})
	}
}

// TestScaleNearestReusesRows: one Scaler through a sequence of frames in
// one buffer (small edits, none, a whole change) and of views and filters
// in between gives, every time, the image a fresh Scaler computes.
func TestScaleNearestReusesRows(t *testing.T) {
	const w, h = 1440, 900
	r := rand.New(rand.NewPCG(4, 2))
	src := testimage.Desktop(w, h)
	fit, _ := New(Size{w, h}, nil, 1280, 800, true)
	crop, _ := New(Size{w, h}, &Rect{100, 50, 900, 700}, 640, 480, true)
	s := Scaler{}
	for i := range 40 {
		tr := fit
		switch {
		case i%9 == 4:
			tr = crop
		case i%13 == 6:
			s.Filter = Area
		default:
			s.Filter = Nearest
		}
		switch i % 5 {
		case 1: // nothing changes
		case 3:
			copy(src.Pix, noisy(w, h, uint64(i)).Pix)
		default:
			x, y := r.IntN(w), r.IntN(h)
			draw.Draw(src, image.Rect(x, y, x+1+r.IntN(150), y+1+r.IntN(40)), image.NewUniform(color.RGBA{uint8(i), 200, 9, 255}), image.Point{}, draw.Src)
		}
		got, err := s.Scale(src, tr)
		if err != nil {
			t.Fatal(err)
		}
		ref := Scaler{Filter: s.Filter, fresh: true}
		want, _ := ref.Scale(src, tr)
		if !bytes.Equal(got.Pix, want.Pix) {
			t.Fatalf("frame %d (%v, %+v): differs from a fresh scaling", i, s.Filter, tr.Image)
		}
	}
}
