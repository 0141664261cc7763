package scaling

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"image"
	"math"
	"runtime"
	"slices"
	"sort"

	"github.com/agentd-dev/agentd/internal/workpool"
)

// Scaler turns a captured screen into the image of a transform: crop, then
// resize with a separable filter, by default Nearest: each image pixel is
// the screen pixel ToScreen maps it to, averaged with the screen pixels
// beside it that no image pixel's centre falls in.
//
// Nearest is the default because the model pays for every byte of the PNG
// on every step, and a filter that blends every pixel draws each glyph
// differently at each of its subpixel phases, so deflate cannot match one
// glyph with the next; Nearest leaves 7 of 8 rows and columns of
// 1440×900 → 1280×800 untouched (49 of 64 pixels exact), so text repeats
// as on the screen, and averages the 8th rather than dropping it, so no
// one-pixel line vanishes. Fitting 1440×900 into 1280×800 (go run
// ./scaling/cmd/filters, which also writes magnified crops of small text
// for each filter into docs/images):
//
//	                            bench desktop       exercise (Firefox form, editor)
//	native, no scaling          218,312  1.00       66,385  1.00
//	nearest                     194,262  0.89       58,931  0.89
//	area                        322,480  1.48       78,703  1.19
//	Catmull-Rom                 524,079  2.40       83,987  1.27
//	Catmull-Rom, clamped        462,443  2.12       77,342  1.17
//	triangle                    366,310  1.68       81,857  1.23
//
// It also costs the least CPU: 3.1 against 6.7 ms (area) to scale the
// desktop (go test -bench 'Scale/own-(nearest|area)' -cpu 1, CPU time per
// op, medians of 5, load average 18), since an output pixel is a copy or a
// byte-wise mean of two (bandPick). Small text stays legible in the crops,
// with darker stems than area's; glyphs lose one column in nine, evenly.
// Area, CatmullRom and Triangle remain for callers that prefer them; the
// rest of this comment is about their general path.
//
// It is our own resampler rather than github.com/disintegration/imaging,
// which works in float64 and allocates a fresh NRGBA and weight tables on
// every call. What makes it fast:
//
//   - Pixels are held "in lanes": R, G and B in three 21-bit lanes of a
//     uint64, so one multiplication and one addition per tap filter all three
//     channels; rounding and clamping the three lanes is one table lookup
//     each. The weights are 12-bit fixed point (see the lane constants).
//   - Each output pixel's taps are one record (first source pixel, weights),
//     with the loops unrolled for 4 taps (upscales) and 5 taps (mild
//     downscales such as 1440 → 1280) and without bounds checks inside.
//   - The horizontal pass feeds a ring of the last few resized rows, stored
//     pixel by pixel, so the vertical pass reads each output pixel's inputs
//     from consecutive words, in cache: no full-size intermediate image.
//   - Screens are mostly flat: where a filter window is one colour, and where
//     rows are the same as the rows above (see band), nothing is computed.
//     This is exact, since the weights sum to exactly 1.
//   - Bands of output rows are scaled by runtime.GOMAXPROCS(0) goroutines
//     (at most one per 64 Ki output pixels, internal/workpool), started for each call and
//     waited for: nothing outlives Scale, and there is nothing to stop.
//     A persistent pool measured ≈10 µs less wall time per call of ≈5 ms, so
//     it is not worth an owner and an exit. Every output row is computed the
//     same way whichever band it falls in, so the image does not depend on
//     the number of workers.
//
// 1440×900 → 1280×800 on the 2-core build machine while other jobs ran
// (load average 3–4, so two workers rarely had two free cores; CPU time per
// op is the steadier figure), medians of 5 runs of
//
//	go test -run '^$' -bench 'Scale/' -benchmem -count 5 -cpu 1   (and -cpu 2) ./scaling/
//
// on noise (worst case: no pixel is flat) and on the text-heavy desktop:
//
//	                                  wall/op   CPU/op   allocs/op (steady state)
//	before: 14-bit, 3 byte channels   30.9 ms   25.7 ms  0 (+4.6 MB intermediate image)
//	after, noise, 1 worker            13.7 ms   12.4 ms  0
//	after, noise, 2 workers           12.5 ms   12.7 ms  0 (best run 5.6 ms wall)
//	after, desktop, 1 worker          10.6 ms    9.0 ms  0
//	after, desktop, 2 workers          8.9 ms    9.2 ms  0 (best run 5.7 ms wall)
//	imaging CatmullRom                45–59 ms  50–53 ms 24, 9.1 MB
//	imaging Linear                    30–41 ms  32–41 ms 24, 9.1 MB
//
// (before on the desktop: 35.7 ms wall, 28.5 ms CPU.) On an idle machine two
// workers halve the wall time (9.4 → 5.0 ms on noise). The whole scaled
// screenshot, BenchmarkE2EScreenshotFit1280x800 in ./agentd/, went from
// 38.2 to 12.3 ms (native size: 12.0 ms); capture's BenchmarkScreenshot
// from 37.7 ms wall and 32.7 ms CPU to 13.9 and 11.7.
//
// The result is within 2 per channel of imaging's CatmullRom (the tests
// check it, on noise and on the desktop), flat areas keep their exact colour
// (small PNGs, and pixel-exact tests away from edges).
//
// The zero Scaler is ready to use. A Scaler is not safe for concurrent use;
// it keeps its buffers between calls, so steady-state scaling allocates
// nothing: the workers' scratch is a few rows each (≈64 KB at 1280 wide).
type Scaler struct {
	// Filter is the resampling filter; the zero value is Nearest.
	Filter Filter
	// Full computes every output row, even those whose source rows are
	// the same as in the last call (for measuring the whole work).
	Full bool

	xw, yw weights
	out    *image.RGBA
	view   image.RGBA // header returned for a crop at native size

	// The current call, shared with its workers.
	job     job
	scratch []scratch // one per worker
	pool    workpool.Pool

	// bandPick's copy of the last source crop (packed rows), valid for
	// the last transform if lastValid: rows equal to it need no work, as
	// s.out still holds what they make (frameRows).
	last      []uint8
	lastT     Transform
	lastValid bool
	changed   []bool // per crop row, in the current call

	workers int  // if > 0, use exactly this many workers (tests)
	fresh   bool // compute every pixel, reusing nothing from the row above (tests)
}

// job is one call's work: the output's rows are split into bands, which the
// workers claim in turn.
type job struct {
	src    []uint8 // the crop's first pixel onward
	stride int     // of src
	cw     int     // crop width
	out    *image.RGBA
	hPass  bool // the width changes
	vPass  bool // the height changes
	pick   bool // Nearest with at most two pixels per output: bandPick
	reuse  bool // bandPick may skip output rows whose source rows are unchanged
	bands  int
}

// scratch is one worker's buffers. ring holds the last yw.taps
// horizontally-resized source rows, pixel by pixel: row r is in slot
// r%taps, pixel x of it at ring[x*taps+slot] (slot[i] is the row in slot i,
// or -1). So each source row is resized once per band, the rows stay in
// cache for the vertical pass, and that pass reads each output pixel's
// inputs from consecutive words.
type scratch struct {
	pair []uint8  // bandPick: the first of two source rows, resized
	row  []uint64 // one source row of the crop, in lanes
	mid  []uint64 // one horizontally-resized row, in lanes (height unchanged)
	ring []uint64
	slot []int32
	w    []uint64 // the weights of the ring's slots for the current output row
	// The outputs [lo[i], hi[i]) are where slot i's row may differ from the
	// row before it (none if lo[i] >= hi[i]).
	lo, hi []int32
}

const (
	// parallelMinPixels is the output size per worker below which Scale
	// starts no more workers: each costs ≈15 µs of CPU (start and wake-up).
	parallelMinPixels = 1 << 16

	// bandsPerWorker splits the rows more finely than one band per worker,
	// so that when another process takes a core, the other worker takes
	// over the rest. Each band recomputes yw.taps-1 source rows at its top.
	bandsPerWorker = 4
)

// Scale returns the image of t made from src, which must be the whole screen
// (src's size equals t.Screen). The source's alpha is ignored: the result is
// opaque.
//
// The result is valid until the next call to Scale and must not be modified:
// for the whole screen at native size it is src itself, and for a crop at
// native size it shares src's pixels (zero-copy); otherwise it is a buffer
// the Scaler reuses.
//
// Large images are scaled by up to runtime.GOMAXPROCS(0) goroutines, which
// Scale starts and waits for: none outlives the call.
func (s *Scaler) Scale(src *image.RGBA, t Transform) (*image.RGBA, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if b := src.Bounds(); b.Dx() != t.Screen.W || b.Dy() != t.Screen.H {
		return nil, fmt.Errorf("scaling: source image is %d×%d but the transform's screen is %d×%d",
			b.Dx(), b.Dy(), t.Screen.W, t.Screen.H)
	}
	if t.Identity() {
		return src, nil
	}
	c, img := t.Crop, t.Image
	origin := src.Bounds().Min
	off := src.PixOffset(origin.X+c.X, origin.Y+c.Y)
	if img.W == c.W && img.H == c.H {
		s.view = image.RGBA{
			Pix:    src.Pix[off : off+(c.H-1)*src.Stride+c.W*4],
			Stride: src.Stride,
			Rect:   image.Rect(0, 0, c.W, c.H),
		}
		return &s.view, nil
	}

	if s.out == nil || s.out.Rect.Dx() != img.W || s.out.Rect.Dy() != img.H {
		s.out = image.NewRGBA(image.Rect(0, 0, img.W, img.H))
	}
	j := job{
		src:    src.Pix[off : off+(c.H-1)*src.Stride+c.W*4],
		stride: src.Stride,
		cw:     c.W,
		out:    s.out,
		hPass:  img.W != c.W,
		vPass:  img.H != c.H,
	}
	if j.hPass {
		if err := s.xw.compute(c.W, img.W, s.Filter); err != nil {
			return nil, err
		}
	}
	if j.vPass {
		if err := s.yw.compute(c.H, img.H, s.Filter); err != nil {
			return nil, err
		}
	}

	j.pick = s.Filter == Nearest && (!j.hPass || s.xw.pick != nil) && (!j.vPass || s.yw.pick != nil)
	j.reuse = j.pick && !s.fresh && !s.Full && s.lastValid && s.lastT == t
	s.lastValid = false // until this call has written s.out

	workers := s.workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), img.W*img.H/parallelMinPixels)
	}
	workers = max(min(workers, img.H), 1)
	j.bands = min(workers*bandsPerWorker, img.H)
	s.job = j
	s.grow(workers)

	if j.pick && !s.fresh {
		// Which crop rows changed since the last call (all, without a
		// valid copy), keeping the copy up to date.
		s.last, s.changed = grow(s.last, c.W*4*c.H), grow(s.changed, c.H)
		s.pool.Run(workers, j.bands, (*rowsJob)(s))
	}
	s.pool.Run(workers, j.bands, (*bandJob)(s))
	if j.pick && !s.fresh {
		s.lastT, s.lastValid = t, true
	}
	s.job = job{} // don't keep the caller's source alive
	return s.out, nil
}

// grow sizes the scratch buffers of n workers for s.job.
func (s *Scaler) grow(n int) {
	if len(s.scratch) < n {
		s.scratch = append(s.scratch, make([]scratch, n-len(s.scratch))...)
	}
	j := &s.job
	w := j.out.Rect.Dx()
	for i := range s.scratch[:n] {
		sc := &s.scratch[i]
		if j.pick {
			sc.pair = grow(sc.pair, w*4)
			continue
		}
		sc.row = grow(sc.row, j.cw)
		if !j.vPass {
			sc.mid = grow(sc.mid, w)
			continue
		}
		taps := s.yw.taps
		sc.ring = grow(sc.ring, taps*w)
		sc.slot, sc.w = grow(sc.slot, taps), grow(sc.w, taps)
		sc.lo, sc.hi = grow(sc.lo, taps), grow(sc.hi, taps)
	}
}

// bandJob is a Scaler as the workpool.Job of its current call: one unit is
// one band of output rows.
type bandJob Scaler

func (b *bandJob) Do(worker, band int) {
	s := (*Scaler)(b)
	sc, j := &s.scratch[worker], &s.job
	h := j.out.Rect.Dy()
	if j.pick {
		s.bandPick(sc, band*h/j.bands, (band+1)*h/j.bands)
	} else if j.vPass {
		s.band(sc, band*h/j.bands, (band+1)*h/j.bands)
	} else {
		s.bandWidthOnly(sc, band*h/j.bands, (band+1)*h/j.bands)
	}
}

// band computes output rows y0 … y1-1 when the height changes.
//
// Screens are mostly flat, and most of a row is often the same as the row
// above it: fill records, for each row in the ring, the span of outputs
// where it may differ from its predecessor. Outside the union of those spans
// over an output row's window, all the window's rows are equal, so the
// output is that colour (the weights sum to 1: exactly what the filter
// would give), and when the whole window is one repeated row, as it was for
// the output row above, the output row is a copy of that one.
func (s *Scaler) band(sc *scratch, y0, y1 int) {
	j := &s.job
	out := j.out
	w := out.Rect.Dx()
	for i := range sc.slot {
		sc.slot[i] = -1 // a new band, or a new source
	}
	n := s.yw.taps
	prevSame, prevA, prevB := false, 0, 0
	for y := y0; y < y1; y++ {
		e := s.yw.px[y*(n+1) : (y+1)*(n+1)]
		first := int(e[0])
		// Only the rows of non-zero weight are read (Nearest's outputs
		// mostly have one); the others' weights are zero in sc.w.
		k0, k1 := 0, n-1
		for e[1+k0] == 0 {
			k0++
		}
		for e[1+k1] == 0 {
			k1--
		}
		lo, hi, top := w, 0, 0
		for k := k0; k <= k1; k++ {
			i := s.fill(sc, first+k)
			if k == k0 {
				top = i
			} else if sc.lo[i] < sc.hi[i] {
				lo, hi = min(lo, int(sc.lo[i])), max(hi, int(sc.hi[i]))
			}
		}
		dst := out.Pix[y*out.Stride : y*out.Stride+w*4]
		a, b := first+k0, first+k1
		same := lo >= hi // every row of the window is the same
		if same {
			// Rows a … b are equal, and so were the row above's: the
			// output rows are equal if the windows share a row, or if the
			// row above's ends just before a, which repeats its last row.
			overlap := a <= prevB && prevA <= b
			next := a == prevB+1 && sc.lo[top] >= sc.hi[top]
			if prevSame && y > y0 && (overlap || next) {
				copy(dst, out.Pix[(y-1)*out.Stride:(y-1)*out.Stride+w*4])
			} else {
				packColumn(dst, sc.ring, n, top)
			}
		} else {
			for k := range sc.w {
				sc.w[k] = 0
			}
			for k := k0; k <= k1; k++ {
				sc.w[(first+k)%n] = e[1+k]
			}
			packColumn(dst[:lo*4], sc.ring[:lo*n], n, top)
			resizeColumn(dst[lo*4:hi*4], sc.ring[lo*n:hi*n], sc.w)
			packColumn(dst[hi*4:], sc.ring[hi*n:], n, top)
		}
		prevSame, prevA, prevB = same, a, b
	}
}

// bandWidthOnly computes output rows y0 … y1-1 when only the width changes,
// recomputing only the outputs that a source row's differences from the row
// above reach.
func (s *Scaler) bandWidthOnly(sc *scratch, y0, y1 int) {
	j := &s.job
	out := j.out
	w := out.Rect.Dx()
	for y := y0; y < y1; y++ {
		src := j.src[y*j.stride : y*j.stride+j.cw*4]
		dst := out.Pix[y*out.Stride : y*out.Stride+w*4]
		lo, hi := 0, w
		if y > y0 && !s.fresh { // sc.mid and the output row above hold row y-1
			lo, hi = s.xw.reach(diffRange(src, j.src[(y-1)*j.stride:(y-1)*j.stride+j.cw*4]))
			copy(dst, out.Pix[(y-1)*out.Stride:(y-1)*out.Stride+w*4])
		}
		if lo < hi {
			a, b := s.xw.reads(lo, hi)
			spreadRow(sc.row[a:b], 1, src[a*4:b*4])
			s.xw.resizeRow(sc.mid[lo:], 1, sc.row, lo, hi)
			packRow(dst[lo*4:hi*4], sc.mid[lo:hi])
		}
	}
}

// bandPick computes output rows y0 … y1-1 for the Nearest filter when no
// output averages more than two source pixels on either axis: each
// output row is one source row resized, or the mean of two, and each
// pixel of a resized row one source pixel, or the mean of two. That is a
// copy or a byte-wise average, with no lanes, tables or weights: 3-4 times
// less CPU than the general path at 1440×900 → 1280×800. The means round
// half up, horizontally then vertically, exactly as the general path's
// weights of ½ do.
func (s *Scaler) bandPick(sc *scratch, y0, y1 int) {
	j := &s.job
	out := j.out
	w := out.Rect.Dx()
	for y := y0; y < y1; y++ {
		r, two := y, false
		if j.vPass {
			r, two = pickAt(s.yw.pick[y])
		}
		if j.reuse && !s.changed[r] && (!two || !s.changed[r+1]) {
			continue // s.out holds this row already
		}
		dst := out.Pix[y*out.Stride : y*out.Stride+w*4]
		s.pickRow(dst, j.src[r*j.stride:r*j.stride+j.cw*4])
		if two {
			s.pickRow(sc.pair, j.src[(r+1)*j.stride:(r+1)*j.stride+j.cw*4])
			avgRow(dst, sc.pair)
		}
	}
}

// rowsJob is a Scaler as the workpool.Job that finds the crop rows that
// changed since its last call, for bandPick: one unit is a band of crop
// rows, compared with the copy and copied if they differ. A screenshot
// after a small change scales only the rows it reaches; comparing costs a
// pass over the crop, ≈0.5 ms at 1440×900 here.
type rowsJob Scaler

func (rj *rowsJob) Do(_, band int) {
	s := (*Scaler)(rj)
	j := &s.job
	h := len(s.changed)
	row := j.cw * 4
	for r := band * h / j.bands; r < (band+1)*h/j.bands; r++ {
		src, last := j.src[r*j.stride:r*j.stride+row], s.last[r*row:(r+1)*row]
		s.changed[r] = !j.reuse || !bytes.Equal(src, last)
		if s.changed[r] {
			copy(last, src)
		}
	}
}

// pickAt decodes an entry of weights.pick.
func pickAt(p uint32) (first int, two bool) {
	return int(p &^ pickTwo), p&pickTwo != 0
}

// pickTwo marks an entry of weights.pick that averages two pixels.
const pickTwo = 1 << 31

// pickRow resizes one source row (RGBA) into dst (opaque RGBA) for
// bandPick.
func (s *Scaler) pickRow(dst, src []uint8) {
	if !s.job.hPass {
		for x := range len(dst) / 4 {
			binary.LittleEndian.PutUint32(dst[x*4:], binary.LittleEndian.Uint32(src[x*4:])|0xff000000)
		}
		return
	}
	pick := s.xw.pick[:len(dst)/4]
	for x, p := range pick {
		i := int(p&^pickTwo) * 4
		a := binary.LittleEndian.Uint32(src[i:])
		if p&pickTwo != 0 {
			a = avg4(a, binary.LittleEndian.Uint32(src[i+4:]))
		}
		binary.LittleEndian.PutUint32(dst[x*4:], a|0xff000000)
	}
}

// avgRow sets dst to the byte-wise mean of dst and src, rounded up.
func avgRow(dst, src []uint8) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		a, b := binary.LittleEndian.Uint64(dst[i:]), binary.LittleEndian.Uint64(src[i:])
		binary.LittleEndian.PutUint64(dst[i:], (a|b)-((a^b)>>1)&0x7f7f7f7f7f7f7f7f)
	}
	for ; i < len(dst); i += 4 {
		binary.LittleEndian.PutUint32(dst[i:], avg4(binary.LittleEndian.Uint32(dst[i:]), binary.LittleEndian.Uint32(src[i:])))
	}
}

// avg4 is the byte-wise mean of a and b, rounded up: (a+b+1)>>1 per byte.
func avg4(a, b uint32) uint32 {
	return (a | b) - ((a^b)>>1)&0x7f7f7f7f
}

// fill puts source row r of the crop, horizontally resized, in its slot of
// the ring unless it is there already, and returns the slot. It records in
// lo and hi the outputs where row r may differ from row r-1, and if row r-1
// is in the ring it copies the rest from there instead of computing it.
func (s *Scaler) fill(sc *scratch, r int) int {
	j := &s.job
	n := len(sc.slot)
	i := r % n
	if sc.slot[i] == int32(r) {
		return i
	}
	w := j.out.Rect.Dx()
	src := j.src[r*j.stride : r*j.stride+j.cw*4]
	lo, hi := 0, w // the outputs where row r may differ from row r-1
	if r > 0 && !s.fresh {
		lo, hi = diffRange(src, j.src[(r-1)*j.stride:(r-1)*j.stride+j.cw*4])
		if j.hPass {
			lo, hi = s.xw.reach(lo, hi)
		}
	}
	sc.lo[i], sc.hi[i] = int32(lo), int32(hi)
	if p := (r + n - 1) % n; r > 0 && sc.slot[p] == int32(r-1) && !s.fresh {
		if p != i {
			for x := range lo {
				sc.ring[x*n+i] = sc.ring[x*n+p]
			}
			for x := hi; x < w; x++ {
				sc.ring[x*n+i] = sc.ring[x*n+p]
			}
		}
	} else {
		lo, hi = 0, w
	}
	sc.slot[i] = int32(r)
	if lo >= hi {
		return i
	}
	if j.hPass {
		a, b := s.xw.reads(lo, hi)
		spreadRow(sc.row[a:b], 1, src[a*4:b*4])
		s.xw.resizeRow(sc.ring[lo*n+i:], n, sc.row, lo, hi)
	} else {
		spreadRow(sc.ring[lo*n+i:], n, src[lo*4:hi*4])
	}
	return i
}

// diffRange returns the pixels [lo, hi) outside which the RGBA rows a and b
// (of the same length) are equal; lo == hi == 0 if they are equal.
func diffRange(a, b []uint8) (lo, hi int) {
	const block = 64 // pixels compared at once
	n := len(a) / 4
	b = b[:len(a)]
	if bytes.Equal(a, b) {
		return 0, 0
	}
	for lo+block <= n && bytes.Equal(a[lo*4:(lo+block)*4], b[lo*4:(lo+block)*4]) {
		lo += block
	}
	for binary.LittleEndian.Uint32(a[lo*4:]) == binary.LittleEndian.Uint32(b[lo*4:]) {
		lo++ // stops at a pixel that differs
	}
	hi = n
	for hi-block >= lo && bytes.Equal(a[(hi-block)*4:hi*4], b[(hi-block)*4:hi*4]) {
		hi -= block
	}
	for binary.LittleEndian.Uint32(a[hi*4-4:]) == binary.LittleEndian.Uint32(b[hi*4-4:]) {
		hi-- // stops at lo, which differs
	}
	return lo, hi
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// The filter works on pixels "in lanes": a uint64 holding R, G and B in
// three 21-bit lanes (bits 0, 21 and 42), so that one multiplication by a
// weight and one addition handle all three channels. Products wrap modulo
// 2⁶⁴ where a lane goes negative, but the arithmetic is exact modulo 2⁶⁴,
// so the sum is right as long as each lane's final value fits in 21 bits:
// it is Σ weight×channel + accBias, where the weights are 12-bit fixed point
// summing to exactly 1<<12 with negative lobes summing to at most
// maxNegWeight, so every lane ends in [0, 2²¹).
const (
	weightShift = 12
	laneBits    = 21
	lane1       = 1 | 1<<laneBits | 1<<(2*laneBits) // 1 in each lane

	// A lane's sum plus accBias is (value+64)<<weightShift plus the rounding
	// half: after the shift, lane values -64 … 447 are 0 … 511 (9 bits).
	laneOffset = 64
	accBias    = (laneOffset<<weightShift + 1<<(weightShift-1)) * lane1

	// The lowest sum must stay ≥ -accBias; the highest, 255×(1<<12 +
	// maxNegWeight) + accBias, is then far below 2²¹.
	maxNegWeight = (laneOffset<<weightShift + 1<<(weightShift-1)) / 255
)

// spread puts an RGBA pixel's colour in lanes.
func spread(p uint32) uint64 {
	x := uint64(p)
	return x&0xff | x&0xff00<<(laneBits-8) | x&0xff0000<<(2*laneBits-16)
}

// settle turns a filter sum into lanes of bytes: rounded, shifted and
// clamped to 0…255 in all three lanes, by table (branch-free).
func (t *laneTab) settle(acc uint64) uint64 {
	return t[0][acc>>weightShift&0x1ff] |
		t[1][acc>>(weightShift+laneBits)&0x1ff] |
		t[2][acc>>(weightShift+2*laneBits)&0x1ff]
}

// settle turns a filter sum into an opaque RGBA pixel.
func (t *rgbaTab) settle(acc uint64) uint32 {
	return t[0][acc>>weightShift&0x1ff] |
		t[1][acc>>(weightShift+laneBits)&0x1ff] |
		t[2][acc>>(weightShift+2*laneBits)&0x1ff]
}

type (
	laneTab [3][512]uint64
	rgbaTab [3][512]uint32
)

// tabs map a lane's value+laneOffset (0 … 511, see accBias) to the clamped
// byte, placed in its lane (lanes) or in its RGBA byte (rgba; alpha 0xff
// comes with red).
var tabs = func() (t struct {
	lanes laneTab
	rgba  rgbaTab
}) {
	for u := range 512 {
		v := uint64(min(max(u-laneOffset, 0), 255))
		for l := range 3 {
			t.lanes[l][u] = v << (l * laneBits)
			t.rgba[l][u] = uint32(v) << (l * 8)
		}
		t.rgba[0][u] |= 0xff000000
	}
	return t
}()

// pack turns lanes of bytes into an opaque RGBA pixel.
func pack(t uint64) uint32 {
	return uint32(t&0xff|t>>(laneBits-8)&0xff00|t>>(2*laneBits-16)&0xff0000) | 0xff000000
}

// spreadRow puts a row of RGBA pixels in lanes, at dst[0], dst[stride], ….
func spreadRow(dst []uint64, stride int, src []uint8) {
	n := len(src) / 4
	if stride == 1 {
		dst = dst[:n]
		for i := range dst {
			dst[i] = spread(binary.LittleEndian.Uint32(src[i*4:]))
		}
		return
	}
	for i := range n {
		dst[i*stride] = spread(binary.LittleEndian.Uint32(src[i*4:]))
	}
}

// packRow turns a row of lanes of bytes into RGBA pixels.
func packRow(dst []uint8, src []uint64) {
	dst = dst[:len(src)*4]
	for i, t := range src {
		binary.LittleEndian.PutUint32(dst[i*4:], pack(t))
	}
}

// weights are the filter taps for resizing one axis from src to dst pixels:
// output i reads source pixels first … first+taps-1 with weights w0 …
// w(taps-1), stored together as px[i*(taps+1):(i+1)*(taps+1)] = first, w0, …
// (the weights sign-extended, ready to multiply lanes). Every output has the
// same number of taps (padded with zero weights near the edges) so the inner
// loops have no per-pixel branches.
type weights struct {
	src, dst int
	filter   Filter
	taps     int
	px       []uint64
	// pick, for Nearest when no output has more than two pixels: output
	// i's first pixel, with pickTwo set if it averages it with the next.
	pick []uint32
	// Monotone bounds on the windows' first pixels: maxFirst[x] is the
	// largest first of outputs 0 … x, minFirst[x] the smallest of outputs
	// x … dst-1. (Trimming zero weights can make first step back by one.)
	maxFirst, minFirst []int32
}

// reach returns outputs [x0, x1) that include every output reading source
// pixels [lo, hi); x0 == x1 == 0 if lo >= hi.
func (ws *weights) reach(lo, hi int) (x0, x1 int) {
	if lo >= hi {
		return 0, 0
	}
	// The first output whose window may end after lo, and the first from
	// which every window starts at or after hi.
	x0 = sort.Search(ws.dst, func(x int) bool { return int(ws.maxFirst[x])+ws.taps > lo })
	x1 = sort.Search(ws.dst, func(x int) bool { return int(ws.minFirst[x]) >= hi })
	if x0 >= x1 {
		return 0, 0
	}
	return x0, x1
}

// reads returns the source pixels [a, b) that outputs [x0, x1) read.
func (ws *weights) reads(x0, x1 int) (a, b int) {
	return int(ws.minFirst[x0]), int(ws.maxFirst[x1-1]) + ws.taps
}

// Filter is how Scaler weighs the source pixels of an output pixel.
type Filter uint8

// The filters.
const (
	// Nearest shows in each output pixel the source pixel its centre falls
	// in (the one ToScreen names), averaged, with equal weights, with the
	// source pixels next to it that no output pixel's centre falls in (each
	// goes to the output pixel whose footprint covers more of it; on a tie,
	// the first). So when shrinking by less than 2, most output pixels are
	// source pixels unchanged, the others the mean of two neighbours, and a
	// one-pixel line never vanishes. Enlarging, it is nearest neighbour.
	Nearest Filter = iota
	// Area averages the source pixels under the output pixel's footprint,
	// each weighted by the part of it covered (a box filter of the
	// footprint's width): no overshoot, 2-3 taps for a mild downscale.
	Area
	// CatmullRom is the Catmull-Rom cubic (B=0, C=½), widened by the
	// downscale factor: sharper edges, with halos (ringing) around them.
	CatmullRom
	// Triangle is the tent filter, widened by the downscale factor.
	Triangle
)

// String names the filter.
func (f Filter) String() string {
	switch f {
	case Nearest:
		return "nearest"
	case Area:
		return "area"
	case CatmullRom:
		return "catmull-rom"
	case Triangle:
		return "triangle"
	}
	return fmt.Sprintf("Filter(%d)", uint8(f))
}

// catmullRom is the Catmull-Rom cubic (B=0, C=½), support 2.
func catmullRom(x float64) float64 {
	x = math.Abs(x)
	switch {
	case x < 1:
		return (3*x-5)*x*x/2 + 1
	case x < 2:
		return ((-x+5)*x-8)*x/2 + 2
	}
	return 0
}

const catmullRomSupport = 2

// triangle is the tent filter, support 1.
func triangle(x float64) float64 {
	return math.Max(0, 1-math.Abs(x))
}

// compute fills the taps of filter f for src → dst unless they are already
// those.
func (ws *weights) compute(src, dst int, f Filter) error {
	if ws.src == src && ws.dst == dst && ws.filter == f && ws.px != nil {
		return nil
	}
	scale := float64(src) / float64(dst)
	fscale := math.Max(scale, 1) // widen the kernel when shrinking (antialiasing)
	var kernel func(float64) float64
	var radius float64
	switch f {
	case Nearest, Area:
	case CatmullRom:
		kernel, radius = catmullRom, fscale*catmullRomSupport
	case Triangle:
		kernel, radius = triangle, fscale
	default:
		return fmt.Errorf("scaling: unknown filter %v", f)
	}

	// Quantize each output's weights, then trim zero weights at both ends
	// so the common window is as narrow as the kernel allows.
	begins := make([]int, dst)
	lens := make([]int, dst)
	maxTaps := int(2*radius) + 2
	if kernel == nil {
		maxTaps = int(scale) + 2
	}
	var owners []int
	if f == Nearest {
		owners = nearestOwners(src, dst)
	}
	q := make([]int32, 0, dst*maxTaps)
	var fw []float64
	var order []int
	taps := 1
	for i := range dst {
		fw = fw[:0]
		var sum float64
		var begin int
		if f == Nearest {
			// Output i is the mean of the source pixels it owns, a run.
			begin = toScreen1(i, src, dst)
			for begin > 0 && owners[begin-1] == i {
				begin--
			}
			for u := begin; u < src && owners[u] == i; u++ {
				fw = append(fw, 1)
				sum++
			}
			if len(fw) == 0 { // enlarging: another output owns the pixel it shows
				fw, sum = append(fw, 1), 1
			}
		} else if kernel == nil {
			// Output i covers source [a, b); pixel u covers [u, u+1).
			a, b := float64(i)*scale, float64(i+1)*scale
			begin = int(a)
			for u := begin; u < src && float64(u) < b; u++ {
				v := math.Min(b, float64(u+1)) - math.Max(a, float64(u))
				fw = append(fw, v)
				sum += v
			}
		} else {
			centre := (float64(i)+0.5)*scale - 0.5
			begin = max(int(math.Ceil(centre-radius)), 0)
			end := min(int(math.Floor(centre+radius)), src-1)
			for u := begin; u <= end; u++ {
				v := kernel((float64(u) - centre) / fscale)
				fw = append(fw, v)
				sum += v
			}
		}
		// Round by largest remainder: the fixed-point weights sum to exactly
		// 1<<weightShift (flat colours survive unchanged) and each is within
		// one unit of the exact weight.
		row := q[len(q):]
		var isum, neg int32
		order = order[:0]
		for j, v := range fw {
			f := v / sum * (1 << weightShift)
			fl := math.Floor(f)
			row = append(row, int32(fl))
			fw[j] = f - fl // the remainder
			isum += row[j]
			order = append(order, j)
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(fw[b], fw[a]) })
		for _, j := range order[:1<<weightShift-isum] {
			row[j]++
		}
		for _, v := range row {
			neg += min(v, 0)
		}
		if -neg > maxNegWeight { // impossible for Catmull-Rom, whose lobes are small
			return fmt.Errorf("scaling: filter for %d → %d pixels has negative weights of %d/%d", src, dst, -neg, 1<<weightShift)
		}
		lo, hi := 0, len(row)
		for row[lo] == 0 {
			lo++
		}
		for row[hi-1] == 0 {
			hi--
		}
		begins[i], lens[i] = begin+lo, hi-lo
		copy(row, row[lo:hi])
		q = q[:len(q)+hi-lo]
		taps = max(taps, hi-lo)
	}

	ws.src, ws.dst, ws.taps, ws.filter = src, dst, taps, f
	ws.px = grow(ws.px, dst*(taps+1))
	clear(ws.px)
	off := 0
	for i := range dst {
		// Place the window so it stays inside the source.
		first := min(begins[i], src-taps)
		e := ws.px[i*(taps+1) : (i+1)*(taps+1)]
		e[0] = uint64(first)
		for k, v := range q[off : off+lens[i]] {
			e[1+begins[i]-first+k] = uint64(int64(v))
		}
		off += lens[i]
	}
	ws.pick = nil
	if f == Nearest && taps <= 2 {
		ws.pick = make([]uint32, dst)
		for i := range dst {
			ws.pick[i] = uint32(begins[i])
			if lens[i] == 2 {
				ws.pick[i] |= pickTwo
			}
		}
	}
	ws.maxFirst, ws.minFirst = grow(ws.maxFirst, dst), grow(ws.minFirst, dst)
	for i, m := 0, int32(0); i < dst; i++ {
		m = max(m, int32(ws.px[i*(taps+1)]))
		ws.maxFirst[i] = m
	}
	for i, m := dst-1, int32(src); i >= 0; i-- {
		m = min(m, int32(ws.px[i*(taps+1)]))
		ws.minFirst[i] = m
	}
	return nil
}

// nearestOwners returns, for each of src pixels, the output of dst that
// the Nearest filter averages it into (all integer arithmetic, as ToScreen):
// the output whose centre falls in it, or, for a pixel no centre falls in,
// the neighbouring output whose footprint covers more of it. When enlarging
// (dst > src), a pixel in which several centres fall is owned by the first.
func nearestOwners(src, dst int) []int {
	owners := make([]int, src)
	i := 0 // the last output whose centre pixel is at or before u
	for u := range src {
		for i+1 < dst && toScreen1(i+1, src, dst) <= u {
			i++
		}
		c := toScreen1(i, src, dst)
		switch {
		case c == u:
			for i > 0 && toScreen1(i-1, src, dst) == u {
				i-- // enlarging: the first output showing u
			}
			owners[u] = i
			for i+1 < dst && toScreen1(i+1, src, dst) == u {
				i++
			}
		case u < c: // before the first centre
			owners[u] = i
		case i+1 == dst: // after the last centre
			owners[u] = i
		default:
			// Between the centres of i and i+1: the boundary of their
			// footprints is at (i+1)·src/dst; i covers more of u, or as
			// much, when it lies at or after u's centre u+½.
			if 2*int64(i+1)*int64(src) >= (2*int64(u)+1)*int64(dst) {
				owners[u] = i
			} else {
				owners[u] = i + 1
			}
		}
	}
	return owners
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// resizeRow resamples outputs x0 … x1-1 of one row, in lanes, from src into
// dst[0], dst[stride], … (lanes of bytes).
func (ws *weights) resizeRow(dst []uint64, stride int, src []uint64, x0, x1 int) {
	t := &tabs.lanes
	switch ws.taps {
	case 2:
		px := ws.px[x0*3 : x1*3]
		for x := range x1 - x0 {
			e := px[x*3 : x*3+3 : x*3+3]
			i := int(uint32(e[0]))
			p := src[i : i+2 : i+2]
			switch {
			case p[0] == p[1] || e[2] == 0: // flat, or one tap: the weights sum to 1
				dst[x*stride] = p[0]
			case e[1] == 0:
				dst[x*stride] = p[1]
			default:
				dst[x*stride] = t.settle(accBias + p[0]*e[1] + p[1]*e[2])
			}
		}
	case 3:
		px := ws.px[x0*4 : x1*4]
		for x := range x1 - x0 {
			e := px[x*4 : x*4+4 : x*4+4]
			i := int(uint32(e[0]))
			p := src[i : i+3 : i+3]
			if p[0] == p[2] && p[0] == p[1] {
				dst[x*stride] = p[0]
				continue
			}
			dst[x*stride] = t.settle(accBias + p[0]*e[1] + p[1]*e[2] + p[2]*e[3])
		}
	case 4:
		px := ws.px[x0*5 : x1*5]
		for x := range x1 - x0 {
			e := px[x*5 : x*5+5 : x*5+5]
			i := int(uint32(e[0]))
			p := src[i : i+4 : i+4]
			if p[0] == p[3] && p[0] == p[1] && p[0] == p[2] {
				dst[x*stride] = p[0] // flat: the weights sum to 1
				continue
			}
			dst[x*stride] = t.settle(accBias + p[0]*e[1] + p[1]*e[2] + p[2]*e[3] + p[3]*e[4])
		}
	case 5:
		px := ws.px[x0*6 : x1*6]
		for x := range x1 - x0 {
			e := px[x*6 : x*6+6 : x*6+6]
			i := int(uint32(e[0]))
			p := src[i : i+5 : i+5]
			if p[0] == p[4] && p[0] == p[1] && p[0] == p[2] && p[0] == p[3] {
				dst[x*stride] = p[0]
				continue
			}
			dst[x*stride] = t.settle(accBias + p[0]*e[1] + p[1]*e[2] + p[2]*e[3] + p[3]*e[4] + p[4]*e[5])
		}
	default:
		n := ws.taps
		px := ws.px[x0*(n+1) : x1*(n+1)]
		for x := range x1 - x0 {
			e := px[x*(n+1) : (x+1)*(n+1)]
			i := int(uint32(e[0]))
			p := src[i : i+n]
			acc := uint64(accBias)
			for k, wk := range e[1:] {
				acc += p[k] * wk
			}
			dst[x*stride] = t.settle(acc)
		}
	}
}

// packColumn writes RGBA pixels from ring[x*n+slot] (lanes of bytes), for
// an output row whose window rows are all equal.
func packColumn(dst []uint8, ring []uint64, n, slot int) {
	for x := range len(dst) / 4 {
		binary.LittleEndian.PutUint32(dst[x*4:], pack(ring[x*n+slot]))
	}
}

// resizeColumn writes one output row, as RGBA: pixel x is the sum of
// ring[x*n+k]×w[k] (n = len(w)).
func resizeColumn(dst []uint8, ring []uint64, w []uint64) {
	t := &tabs.rgba
	switch len(w) {
	case 2:
		w0, w1 := w[0], w[1]
		for x := range len(dst) / 4 {
			p := ring[x*2 : x*2+2 : x*2+2]
			if p[0] == p[1] {
				binary.LittleEndian.PutUint32(dst[x*4:], pack(p[0]))
				continue
			}
			binary.LittleEndian.PutUint32(dst[x*4:], t.settle(accBias+p[0]*w0+p[1]*w1))
		}
	case 3:
		w0, w1, w2 := w[0], w[1], w[2]
		for x := range len(dst) / 4 {
			p := ring[x*3 : x*3+3 : x*3+3]
			if p[0] == p[2] && p[0] == p[1] {
				binary.LittleEndian.PutUint32(dst[x*4:], pack(p[0]))
				continue
			}
			binary.LittleEndian.PutUint32(dst[x*4:], t.settle(accBias+p[0]*w0+p[1]*w1+p[2]*w2))
		}
	case 4:
		w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
		for x := range len(dst) / 4 {
			p := ring[x*4 : x*4+4 : x*4+4]
			if p[0] == p[3] && p[0] == p[1] && p[0] == p[2] {
				binary.LittleEndian.PutUint32(dst[x*4:], pack(p[0]))
				continue
			}
			binary.LittleEndian.PutUint32(dst[x*4:], t.settle(accBias+p[0]*w0+p[1]*w1+p[2]*w2+p[3]*w3))
		}
	case 5:
		w0, w1, w2, w3, w4 := w[0], w[1], w[2], w[3], w[4]
		for x := range len(dst) / 4 {
			p := ring[x*5 : x*5+5 : x*5+5]
			if p[0] == p[4] && p[0] == p[1] && p[0] == p[2] && p[0] == p[3] {
				binary.LittleEndian.PutUint32(dst[x*4:], pack(p[0]))
				continue
			}
			binary.LittleEndian.PutUint32(dst[x*4:], t.settle(accBias+p[0]*w0+p[1]*w1+p[2]*w2+p[3]*w3+p[4]*w4))
		}
	default:
		n := len(w)
		for x := range len(dst) / 4 {
			p := ring[x*n : x*n+n]
			acc := uint64(accBias)
			for k, wk := range w {
				acc += p[k] * wk
			}
			binary.LittleEndian.PutUint32(dst[x*4:], t.settle(acc))
		}
	}
}
