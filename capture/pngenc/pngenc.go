// Package pngenc writes screenshots as PNG fast: opaque RGBA images as
// 8-bit RGB, rows filtered with Sub or Up and deflated in parallel strips
// that join into one zlib stream; anything else through image/png. It keeps
// its buffers and compressors between calls, so steady-state encoding
// allocates nothing.
package pngenc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"runtime"

	"github.com/agentd-dev/agentd/internal/workpool"
	"github.com/klauspost/compress/flate"
)

// Encoder writes PNGs of screenshots, reusing its buffers and compressors
// between calls. The zero Encoder is ready to use; it is not safe for
// concurrent use.
//
// Opaque *image.RGBA and *image.NRGBA images (every capture and scaled
// image) take a hand-written path: 8-bit RGB (alpha dropped), each row
// filtered with Sub or Up, whichever has the smaller sum of absolute
// differences on a sample of the row (the libpng heuristic over the two
// filters that pay here; a row that repeats the one above is Up at once),
// and deflated with github.com/klauspost/compress/flate at level 1 in
// horizontal strips compressed concurrently (the pigz technique): every
// strip but the last ends with a sync flush, so the strips concatenate into
// one zlib stream, whose Adler-32 is combined from the strips' own. Anything
// else goes to image/png at BestSpeed.
//
// The strips depend only on the image size, never on the number of
// workers, so the PNG's bytes are the same on every machine. Up to
// runtime.GOMAXPROCS(0) goroutines (at most maxWorkers) are started for
// each call and waited for: none outlives Encode.
//
// Measured on realistic desktop content (testimage.Desktop; the 1280×800
// image is the 1440×900 one as the model sees it after scaling) with
// go test -run '^$' -bench PNG -benchmem -count 5 -cpu 1,2 ./capture/pngenc/ on
// the shared 2-core machine, medians of wall and CPU time per op and size
// (BenchmarkPNG; "old" is the previous encoder: Up on every row, each row
// converted to RGB and filtered byte by byte, one zlib stream):
//
//	                         1440×900                  1280×800
//	                         wall   CPU    bytes       wall   CPU    bytes
//	image/png BestSpeed      26.9   25.2   214,843     31.9   31.9   536,097
//	old                       7.3    7.2   222,346      9.4    8.7   547,324
//	old, Paeth               14.1   13.3   219,499     15.1   15.0   545,465
//	old, level 2              8.7    8.2   221,458      9.2    9.2   541,348
//	new, 1 worker             6.6    6.7   218,312      8.1    8.3   524,079
//	new, 2 workers            3.5    6.8   218,312      7.3    8.1   524,079
//
// (The load average was about 3: two workers halve the wall time only
// while the other core is free, as in the 1280×800 runs of 4.1-4.2 ms.)
// Every configuration allocates nothing in the steady state.
//
// The Sub/Up choice is what makes the images smaller (Up alone: 223,233
// and 547,958 bytes); the strips cost 0.1-0.4% (one strip: 217,474 and
// 523,443), so priming each with the end of the one before (pigz's
// dictionaries) is not worth its work. Rejected: Paeth and Average (2× the
// cost, no smaller), the libpng heuristic over all five filters (529 KB at
// 1280×800: worse than Sub/Up), klauspost level 2 (1% smaller for 10% more
// CPU). No deflate level closes the gap of the image resampled with Catmull-Rom, as the scaler then did (level 9:
// 498 KB): its text is drawn at every subpixel phase, with Catmull-Rom's
// halos, so repeated glyphs no longer match.
type Encoder struct {
	// Reuse keeps a copy of the last image encoded (4 bytes a pixel) and
	// its strips, and encodes again only the strips of an image of the
	// same size whose rows, or the row above them (the Up filter's), have
	// changed: the others' compressed bytes are the same, since a strip's
	// bytes depend on its rows alone. A screenshot after an action that
	// changed a button re-encodes one strip of ~12, and the PNG is byte for
	// byte the one a fresh encoding makes. The comparison costs a pass over
	// the image (≈0.3 ms at 1280×800 here); a strip that changed also costs
	// the copy of its rows.
	Reuse bool

	hdr  header
	tail [12 + 4 + 12]byte // the last IDAT (the Adler-32) and IEND
	std  png.Encoder
	pool bufferPool

	// The current call, shared with its workers.
	job     pngJob
	strips  []strip
	workers []pngWorker
	run     workpool.Pool

	// With Reuse: the last image, packed (4·width bytes a row), if valid;
	// and per strip, whether its rows differ from it.
	last          []byte
	lastW, lastH  int
	lastValid     bool
	stale, edited []bool // a strip must be encoded again; its own rows changed
	lastRow       []bool // a strip's last row changed

	// Fixed in use; tests and benchmarks vary them.
	mode      filterMode
	stripRows int // if > 0, rows per strip
	nworkers  int // if > 0, exactly this many workers
}

// filterMode is how rows are filtered.
type filterMode uint8

const (
	filterAdaptive filterMode = iota // Sub or Up, per row
	filterOnlyUp
	filterOnlySub
)

// PNG row filter types.
const (
	filterSub = 1
	filterUp  = 2
)

const (
	// stripBytes is the filtered data per strip, roughly. Each strip costs
	// a sync flush, a block header and the matches it cannot make into the
	// strip before: about 0.3% more bytes for 12 strips at 1280×800. More
	// strips than workers let one worker take over the rest when another
	// process takes the other core.
	stripBytes = 256 << 10

	// maxWorkers caps the goroutines, and so the compressors kept (≈0.5 MB
	// each), on machines with many cores: a screenshot has ~12 strips.
	maxWorkers = 4
)

// pngJob is one call's image.
type pngJob struct {
	pix           []byte
	stride        int
	width, height int
	rows          int // per strip
}

// strip is one strip's output: an IDAT chunk (length, type, zlib data,
// room for the CRC), and the Adler-32 of its filtered data.
type strip struct {
	chunk       []byte
	adler       uint32
	size        int // bytes of filtered data
	translucent bool
}

// Write appends to the chunk: it is the compressor's destination.
func (s *strip) Write(p []byte) (int, error) {
	s.chunk = append(s.chunk, p...)
	return len(p), nil
}

// pngWorker is one worker's compressor and row buffers. A row buffer holds
// the filter byte, the filtered RGB row, and slack for the 4-byte stores
// that write it.
type pngWorker struct {
	fw   *flate.Writer
	row  []byte
	zero []byte // the RGBA row above the first: zeros
}

// Encode writes img to w as a PNG.
func (e *Encoder) Encode(w io.Writer, img image.Image) error {
	pix, stride := rgbaPix(img)
	b := img.Bounds()
	if pix == nil || b.Empty() {
		return e.encodeStd(w, img)
	}
	ok, err := e.encodeRGB(w, pix, stride, b.Dx(), b.Dy())
	if err != nil {
		return fmt.Errorf("png: %w", err)
	}
	if !ok {
		return e.encodeStd(w, img)
	}
	return nil
}

// rgbaPix returns the pixels of an RGBA or NRGBA image, 4 bytes a pixel;
// nil for any other kind.
func rgbaPix(img image.Image) (pix []byte, stride int) {
	switch m := img.(type) {
	case *image.RGBA: // premultiplied, so only opaque images are plain RGB
		return m.Pix, m.Stride
	case *image.NRGBA:
		return m.Pix, m.Stride
	}
	return nil, 0
}

// encodeRGB writes the opaque image pix as an RGB PNG. It writes nothing
// and returns false if a pixel is not opaque.
func (e *Encoder) encodeRGB(w io.Writer, pix []byte, stride, width, height int) (bool, error) {
	rows := e.stripRows
	if rows <= 0 {
		rows = max(stripBytes/(1+3*width), 1)
	}
	nstrips := (height + rows - 1) / rows
	workers := e.nworkers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), maxWorkers)
	}
	workers = max(min(workers, nstrips), 1)
	e.job = pngJob{pix: pix, stride: stride, width: width, height: height, rows: rows}
	if len(e.strips) < nstrips {
		e.strips = append(e.strips, make([]strip, nstrips-len(e.strips))...)
	}
	if len(e.workers) < workers {
		e.workers = append(e.workers, make([]pngWorker, workers-len(e.workers))...)
	}
	for i := range e.workers[:workers] {
		if err := e.workers[i].grow(width); err != nil {
			return false, fmt.Errorf("compressor: %w", err)
		}
	}
	if e.Reuse {
		e.compare(workers, nstrips)
	}
	e.run.Run(workers, nstrips, (*stripJob)(e))
	e.job = pngJob{} // don't keep the caller's pixels alive
	if e.Reuse {
		e.lastValid, e.lastW, e.lastH = true, width, height
	}
	strips := e.strips[:nstrips]
	adler := uint32(1)
	for i := range strips {
		if strips[i].translucent {
			return false, nil
		}
		adler = adler32Combine(adler, strips[i].adler, strips[i].size)
	}

	if _, err := w.Write(e.hdr.set(width, height)); err != nil {
		return false, err
	}
	for i := range strips {
		if _, err := w.Write(strips[i].chunk); err != nil {
			return false, err
		}
	}
	// The Adler-32 is known only now: it ends the stream in an IDAT chunk
	// of its own, written with IEND.
	tail := e.tail[:]
	binary.BigEndian.PutUint32(tail, 4)
	copy(tail[4:], "IDAT")
	binary.BigEndian.PutUint32(tail[8:], adler)
	binary.BigEndian.PutUint32(tail[12:], crc32.ChecksumIEEE(tail[4:12]))
	copy(tail[16:], iend)
	_, err := w.Write(tail)
	return true, err
}

// iend is the final chunk.
const iend = "\x00\x00\x00\x00IEND\xae\x42\x60\x82"

// header is a PNG's signature and IHDR chunk, kept in the encoder so that
// writing it allocates nothing.
type header [8 + 8 + 13 + 4]byte

// set fills h for an 8-bit truecolour image of width × height and returns
// it.
func (h *header) set(width, height int) []byte {
	copy(h[:], "\x89PNG\r\n\x1a\n")
	binary.BigEndian.PutUint32(h[8:], 13)
	copy(h[12:], "IHDR")
	binary.BigEndian.PutUint32(h[16:], uint32(width))
	binary.BigEndian.PutUint32(h[20:], uint32(height))
	h[24], h[25] = 8, 2 // 8 bits per sample, truecolour; compression, filter, interlace 0
	binary.BigEndian.PutUint32(h[29:], crc32.ChecksumIEEE(h[12:29]))
	return h[:]
}

// grow readies the compressor and the row buffers for rows of width
// pixels.
func (wk *pngWorker) grow(width int) error {
	if wk.fw == nil {
		fw, err := flate.NewWriter(nil, flate.BestSpeed)
		if err != nil {
			return err
		}
		wk.fw = fw
	}
	n := 1 + 3*width + 4 // filter byte, RGB row, slack for 4-byte stores
	if cap(wk.row) < n {
		wk.row, wk.zero = make([]byte, n), make([]byte, 4*width)
	}
	wk.row, wk.zero = wk.row[:n], wk.zero[:4*width]
	return nil
}

// stripJob is an Encoder as the workpool.Job of its current call: one unit
// is one strip of rows.
type stripJob Encoder

func (s *stripJob) Do(worker, i int) {
	e := (*Encoder)(s)
	j := &e.job
	y0 := i * j.rows
	y1 := min(y0+j.rows, j.height)
	if e.Reuse {
		if !e.stale[i] {
			return
		}
		rowBytes := 4 * j.width
		for y := y0; y < y1; y++ {
			copy(e.last[y*rowBytes:(y+1)*rowBytes], j.pix[y*j.stride:])
		}
	}
	e.encodeStrip(&e.workers[worker], &e.strips[i], i == 0, y0, y1)
}

// compare decides, for Reuse, which strips must be encoded again: all if
// the last image is of another size, else those with a changed row or
// whose previous strip's last row changed. The rows are compared on up to
// workers goroutines (compareJob).
func (e *Encoder) compare(workers, nstrips int) {
	j := &e.job
	e.stale, e.edited, e.lastRow = grow(e.stale, nstrips), grow(e.edited, nstrips), grow(e.lastRow, nstrips)
	if !e.lastValid || e.lastW != j.width || e.lastH != j.height {
		e.last = grow(e.last, 4*j.width*j.height)
		for i := range e.stale {
			e.stale[i] = true
		}
		return
	}
	e.run.Run(workers, nstrips, (*compareJob)(e))
	for i := range e.stale {
		e.stale[i] = e.edited[i] || i > 0 && e.lastRow[i-1]
	}
}

// compareJob is an Encoder as the workpool.Job that compares one strip's
// rows with the last image's.
type compareJob Encoder

func (c *compareJob) Do(_, i int) {
	e := (*Encoder)(c)
	j := &e.job
	rowBytes := 4 * j.width
	y0 := i * j.rows
	y1 := min(y0+j.rows, j.height)
	e.edited[i], e.lastRow[i] = false, false
	for y := y1 - 1; y >= y0; y-- { // the last row first: it decides lastRow
		if !bytes.Equal(j.pix[y*j.stride:y*j.stride+rowBytes], e.last[y*rowBytes:(y+1)*rowBytes]) {
			e.edited[i], e.lastRow[i] = true, y == y1-1
			return
		}
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// encodeStrip filters and compresses rows y0 … y1-1 into s.
func (e *Encoder) encodeStrip(wk *pngWorker, s *strip, first bool, y0, y1 int) {
	j := &e.job
	if s.chunk == nil {
		s.chunk = make([]byte, 0, 64<<10)
	}
	s.chunk = append(s.chunk[:0], "\x00\x00\x00\x00IDAT"...)
	if first {
		s.chunk = append(s.chunk, 0x78, 0x01) // zlib header: deflate, 32 KiB window, fastest
	}
	wk.fw.Reset(s) // writes to a strip cannot fail: their errors are ignored
	adler := uint32(1)
	rowBytes := 4 * j.width
	prev := wk.zero
	if y0 > 0 {
		prev = j.pix[(y0-1)*j.stride:][:rowBytes]
	}
	var alpha uint64 = ^uint64(0)
	for y := y0; y < y1; y++ {
		cur := j.pix[y*j.stride:][:rowBytes]
		out := e.filterRow(wk, cur, prev, y == 0, &alpha)
		adler = adler32Update(adler, out)
		_, _ = wk.fw.Write(out)
		prev = cur
	}
	if y1 == j.height {
		_ = wk.fw.Close()
	} else {
		_ = wk.fw.Flush()
	}
	s.translucent = alpha&alphaMask != alphaMask
	s.adler = adler
	s.size = (y1 - y0) * (1 + 3*j.width)
	binary.BigEndian.PutUint32(s.chunk, uint32(len(s.chunk)-8))
	s.chunk = binary.BigEndian.AppendUint32(s.chunk, crc32.ChecksumIEEE(s.chunk[4:]))
}

// alphaMask selects the alpha bytes of two RGBA pixels in a little-endian
// word.
const alphaMask = 0xff000000ff000000

// filterRow returns the row cur filtered against prev (both RGBA): the
// filter byte and RGB. It ANDs every pixel word of cur into alpha, unless
// cur repeats prev, which was checked (so not for the first row, whose prev
// is the zero row).
//
// The adaptive mode estimates each filter's sum of absolute differences
// from one word (two pixels) in sampleStep: it picks the same filter as
// the full sums for nearly every row, at a fraction of their cost.
func (e *Encoder) filterRow(wk *pngWorker, cur, prev []byte, first bool, alpha *uint64) []byte {
	out := wk.row[:1+3*len(cur)/4]
	mode := e.mode
	if mode == filterAdaptive {
		if !first && bytes.Equal(cur, prev) { // a repeated row, as often on screens
			out[0] = filterUp
			clear(out[1:])
			return out
		}
		mode = filterOnlyUp
		if sampleSub(cur) < sampleUp(cur, prev) {
			mode = filterOnlySub
		}
	}
	if mode == filterOnlySub {
		subRow(wk.row, cur, alpha)
	} else {
		upRow(wk.row, cur, prev, alpha)
	}
	return out
}

// sampleStep is the stride, in bytes, of the words that the adaptive
// filter choice looks at.
const sampleStep = 8 * 2

// sampleUp is the sum of absolute differences of the Up filter over the
// sampled words of cur.
func sampleUp(cur, prev []byte) uint64 {
	var sad sadSum
	prev = prev[:len(cur)]
	for i := 0; i+8 <= len(cur); i += sampleStep {
		sad.add(sub8(binary.LittleEndian.Uint64(cur[i:]), binary.LittleEndian.Uint64(prev[i:])))
	}
	return sad.total()
}

// sampleSub is the sum of absolute differences of the Sub filter over the
// sampled words of cur (but the first, which has no pixel on its left).
func sampleSub(cur []byte) uint64 {
	var sad sadSum
	for i := sampleStep; i+8 <= len(cur); i += sampleStep {
		sad.add(sub8(binary.LittleEndian.Uint64(cur[i:]), binary.LittleEndian.Uint64(cur[i-4:])))
	}
	return sad.total()
}

// The filters work on RGBA rows two pixels (one 64-bit word) at a time:
// bytewise subtraction without carries between bytes, then each pixel's
// RGB stored with a 4-byte store that the next store partly overwrites (the
// destination has slack for the last).

// upRow writes the Up filter of cur over prev into dst.
func upRow(dst, cur, prev []byte, alpha *uint64) {
	dst[0] = filterUp
	o := dst[1:]
	prev = prev[:len(cur)]
	a := *alpha
	i, k := 0, 0
	for ; i+8 <= len(cur); i, k = i+8, k+6 {
		c := binary.LittleEndian.Uint64(cur[i:])
		d := sub8(c, binary.LittleEndian.Uint64(prev[i:]))
		a &= c
		binary.LittleEndian.PutUint32(o[k:], uint32(d))
		binary.LittleEndian.PutUint32(o[k+3:], uint32(d>>32))
	}
	if i < len(cur) { // an odd last pixel
		c := uint64(binary.LittleEndian.Uint32(cur[i:]))
		d := sub8(c, uint64(binary.LittleEndian.Uint32(prev[i:])))
		a &= c | 0xff00000000000000
		binary.LittleEndian.PutUint32(o[k:], uint32(d))
	}
	*alpha = a
}

// subRow writes the Sub filter of cur into dst.
func subRow(dst, cur []byte, alpha *uint64) {
	dst[0] = filterSub
	o := dst[1:]
	a := *alpha
	left := uint64(0) // the pixel before: none for the first
	i, k := 0, 0
	for ; i+8 <= len(cur); i, k = i+8, k+6 {
		c := binary.LittleEndian.Uint64(cur[i:])
		d := sub8(c, c<<32|left)
		left = c >> 32
		a &= c
		binary.LittleEndian.PutUint32(o[k:], uint32(d))
		binary.LittleEndian.PutUint32(o[k+3:], uint32(d>>32))
	}
	if i < len(cur) {
		c := uint64(binary.LittleEndian.Uint32(cur[i:]))
		d := sub8(c, left)
		a &= c | 0xff00000000000000
		binary.LittleEndian.PutUint32(o[k:], uint32(d))
	}
	*alpha = a
}

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// sub8 subtracts the bytes of b from those of a, each modulo 256.
func sub8(a, b uint64) uint64 {
	return ((a | hi8) - (b &^ hi8)) ^ ((a ^ ^b) & hi8)
}

// sadSum adds up the absolute values of bytes as int8, in four 32-bit
// lanes of two words, so that a word costs no multiplication nor a
// horizontal sum: a row of up to 2^23 pixels cannot overflow a lane.
type sadSum struct{ even, odd uint64 }

func (s *sadSum) add(d uint64) {
	neg := (d & hi8) >> 7 * 0xff // 0xff in each negative byte
	abs := (d ^ neg) + neg&lo8   // each byte ≤ 128: no carries
	pairs := abs&0x00ff00ff00ff00ff + abs>>8&0x00ff00ff00ff00ff
	s.even += pairs & 0x0000ffff0000ffff
	s.odd += pairs >> 16 & 0x0000ffff0000ffff
}

func (s *sadSum) total() uint64 {
	t := s.even + s.odd
	return t&0xffffffff + t>>32
}

// adler32Update continues the Adler-32 a over p (hash/adler32 has no way
// to start from a given sum, as the strips need for combining).
func adler32Update(a uint32, p []byte) uint32 {
	const (
		mod  = 65521
		nmax = 5552 // the most bytes before s2 can overflow
	)
	s1, s2 := a&0xffff, a>>16
	for len(p) > 0 {
		q := p[:min(len(p), nmax)]
		p = p[len(q):]
		for len(q) >= 8 {
			// Eight bytes b0…b7 add Σb to s1 and 8·s1 + Σ(8-i)·bi to s2.
			// The sums are taken in 16-bit lanes (the even and the odd
			// bytes apart); in a product by packed weights, the top lane
			// is the weighted sum, and no lane below it can carry.
			v := binary.LittleEndian.Uint64(q)
			even, odd := v&0x00ff00ff00ff00ff, v>>8&0x00ff00ff00ff00ff
			s2 += 8*s1 + uint32((even*0x0008000600040002)>>48+(odd*0x0007000500030001)>>48)
			s1 += uint32((even + odd) * 0x0001000100010001 >> 48)
			q = q[8:]
		}
		for _, x := range q {
			s1 += uint32(x)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
	}
	return s2<<16 | s1
}

// adler32Combine returns the Adler-32 of the concatenation of A and B from
// a = Adler-32(A), b = Adler-32(B) and len(B) (as zlib's adler32_combine).
func adler32Combine(a, b uint32, lenB int) uint32 {
	const mod = 65521
	rem := uint32(lenB % mod)
	s1 := a & 0xffff
	s2 := rem * s1 % mod
	s1 += b&0xffff + mod - 1
	s2 += a>>16 + b>>16 + mod - rem
	if s1 >= mod {
		s1 -= mod
	}
	if s1 >= mod {
		s1 -= mod
	}
	if s2 >= 2*mod {
		s2 -= 2 * mod
	}
	if s2 >= mod {
		s2 -= mod
	}
	return s2<<16 | s1
}

// encodeStd is the general path, for images that are not opaque RGBA.
func (e *Encoder) encodeStd(w io.Writer, img image.Image) error {
	e.std.CompressionLevel = png.BestSpeed
	e.std.BufferPool = &e.pool
	if err := e.std.Encode(w, img); err != nil {
		return fmt.Errorf("png: %w", err)
	}
	return nil
}

// bufferPool keeps image/png's buffers between calls (one Encoder, one
// encode at a time, so one slot suffices).
type bufferPool struct{ b *png.EncoderBuffer }

func (p *bufferPool) Get() *png.EncoderBuffer  { return p.b }
func (p *bufferPool) Put(b *png.EncoderBuffer) { p.b = b }
