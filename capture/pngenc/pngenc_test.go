package pngenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/adler32"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/scaling"

	"github.com/agentd-dev/agentd/internal/testimage"
)

// viewOf scales a 1440×900 desktop to what the model sees at 1280×800.
func viewOf(src *image.RGBA) *image.RGBA { return scaledDesktop(src, 1280, 800, true) }

func randomRGBA(r *rand.Rand, w, h int, opaque bool) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.IntN(256))
		if i%4 == 3 && opaque {
			img.Pix[i] = 0xff
		}
	}
	if !opaque { // premultiplied: colour ≤ alpha
		for i := 0; i < len(img.Pix); i += 4 {
			a := img.Pix[i+3]
			for j := range 3 {
				img.Pix[i+j] = uint8(int(img.Pix[i+j]) * int(a) / 255)
			}
		}
	}
	return img
}

// checkDecodes decodes a PNG with image/png and compares every pixel with
// the source, converted to non-premultiplied colour as PNG stores it.
func checkDecodes(t *testing.T, data []byte, src image.Image) {
	t.Helper()
	got, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	b := src.Bounds()
	if got.Bounds().Size() != b.Size() {
		t.Fatalf("decoded %v, want size %v", got.Bounds(), b.Size())
	}
	// Opaque RGBA decodes as RGBA: compare rows of bytes (fast under -race).
	if s, ok := src.(*image.RGBA); ok {
		if g, ok := got.(*image.RGBA); ok {
			for y := 0; y < b.Dy(); y++ {
				sr := s.Pix[s.PixOffset(b.Min.X, b.Min.Y+y):][:b.Dx()*4]
				gr := g.Pix[g.PixOffset(0, y):][:b.Dx()*4]
				if !bytes.Equal(sr, gr) {
					t.Fatalf("row %d differs", y)
				}
			}
			return
		}
	}
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			want := color.NRGBAModel.Convert(src.At(b.Min.X+x, b.Min.Y+y))
			have := color.NRGBAModel.Convert(got.At(x, y))
			if have != want {
				t.Fatalf("pixel (%d, %d): decoded %v, want %v", x, y, have, want)
			}
		}
	}
}

// variants are encoders that every test image must survive: the default,
// each filter alone, strips of a few rows (many strips, and a strip
// boundary inside images smaller than a default strip) on one and on three
// workers.
func variants() map[string]func() *Encoder {
	return map[string]func() *Encoder{
		"default":           func() *Encoder { return &Encoder{} },
		"up":                func() *Encoder { return &Encoder{mode: filterOnlyUp} },
		"sub":               func() *Encoder { return &Encoder{mode: filterOnlySub} },
		"3-row strips":      func() *Encoder { return &Encoder{stripRows: 3, nworkers: 3} },
		"1-row strips, 1 w": func() *Encoder { return &Encoder{stripRows: 1, nworkers: 1} },
	}
}

func flatRGBA(w, h int, c color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

func TestEncodeDecodesExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	big := testimage.Desktop(1440, 900)
	nrgba := image.NewNRGBA(image.Rect(0, 0, 37, 11))
	copy(nrgba.Pix, randomRGBA(r, 37, 11, true).Pix)
	oddTranslucent := randomRGBA(r, 333, 77, true) // the odd last pixel of a late row
	copy(oddTranslucent.Pix[oddTranslucent.PixOffset(332, 70):], []byte{0x40, 0x20, 0x10, 0x80})
	images := map[string]image.Image{
		"desktop 1440x900":     big,
		"view 1280x800":        viewOf(big),
		"small view 333x208":   viewOfSize(testimage.Desktop(1440, 900), 333, 208),
		"crop (stride)":        big.SubImage(image.Rect(101, 53, 700, 400)),
		"crop of view":         viewOf(big).SubImage(image.Rect(7, 9, 1000, 611)),
		"1x1":                  randomRGBA(r, 1, 1, true),
		"2x1":                  randomRGBA(r, 2, 1, true),
		"1x9":                  randomRGBA(r, 1, 9, true),
		"one row 1441x1":       randomRGBA(r, 1441, 1, true),
		"odd random":           randomRGBA(r, 333, 77, true),
		"flat":                 flatRGBA(301, 120, color.RGBA{253, 253, 250, 255}),
		"black":                flatRGBA(64, 64, color.RGBA{0, 0, 0, 255}),
		"nrgba":                nrgba,
		"translucent rgba":     randomRGBA(r, 50, 40, false), // image/png fallback
		"translucent odd last": oddTranslucent,
		"transparent":          image.NewRGBA(image.Rect(0, 0, 30, 20)), // rows equal to "the row above the first"
		"transparent 1 row":    image.NewRGBA(image.Rect(0, 0, 30, 1)),
		"gray (fallback)":      image.NewGray(image.Rect(0, 0, 20, 10)),
		"wide random":          randomRGBA(r, 3000, 40, true),
	}
	for vname, mk := range variants() {
		enc := mk() // one encoder for all images: state must not leak between them
		for name, img := range images {
			if vname != "default" && img.Bounds().Dx() >= 1280 && vname != "3-row strips" {
				continue // every filter on the small ones is enough
			}
			t.Run(vname+"/"+name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := enc.Encode(&buf, img); err != nil {
					t.Fatal(err)
				}
				checkDecodes(t, buf.Bytes(), img)
			})
		}
	}
}

// viewOfSize scales a 1440×900 desktop to w×h.
func viewOfSize(src *image.RGBA, w, h int) *image.RGBA { return scaledDesktop(src, w, h, false) }

// scaledDesktop scales a 1440×900 desktop into w×h, fitted (keeping the
// aspect) or not.
func scaledDesktop(src *image.RGBA, w, h int, fit bool) *image.RGBA {
	t, err := scaling.New(scaling.Size{W: 1440, H: 900}, nil, w, h, fit)
	if err != nil {
		panic(err)
	}
	var s scaling.Scaler
	img, err := s.Scale(src, t)
	if err != nil {
		panic(err)
	}
	return img
}

// TestEncodeMatchesImagePNG: the image/png decoder and the serial peer agree
// with Encoder on random sizes and content, native and scaled (a property
// test over many shapes; FuzzEncode explores further).
func TestEncodeMatchesImagePNG(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	desk := testimage.Desktop(1440, 900)
	enc := &Encoder{stripRows: 5}
	var def Encoder
	for i := range 60 {
		w, h := 1+r.IntN(90), 1+r.IntN(40)
		var img *image.RGBA
		switch i % 3 {
		case 0:
			img = randomRGBA(r, w, h, true)
		case 1: // screen-like: a crop of the desktop
			x, y := r.IntN(1440-w), r.IntN(900-h)
			img = desk.SubImage(image.Rect(x, y, x+w, y+h)).(*image.RGBA)
		case 2:
			img = viewOfSize(desk, 40+r.IntN(400), 30+r.IntN(250))
		}
		for _, e := range []*Encoder{enc, &def} {
			var buf bytes.Buffer
			if err := e.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			checkDecodes(t, buf.Bytes(), img)
		}
	}
}

func FuzzEncode(f *testing.F) {
	f.Add(uint16(1), uint16(1), uint8(1), uint64(0))
	f.Add(uint16(333), uint16(77), uint8(5), uint64(1))
	f.Add(uint16(2), uint16(300), uint8(0), uint64(2))
	f.Fuzz(func(t *testing.T, w, h uint16, rows uint8, seed uint64) {
		w, h = 1+w%700, 1+h%300
		r := rand.New(rand.NewPCG(seed, seed>>32))
		img := randomRGBA(r, int(w), int(h), true)
		// Runs of repeated pixels and rows, as on screens.
		for i := 4; i < len(img.Pix); i += 4 {
			if r.IntN(4) > 0 {
				copy(img.Pix[i:i+4], img.Pix[i-4:i])
			}
		}
		for y := 1; y < int(h); y++ {
			if r.IntN(3) == 0 {
				copy(img.Pix[y*img.Stride:(y+1)*img.Stride], img.Pix[(y-1)*img.Stride:y*img.Stride])
			}
		}
		e := &Encoder{stripRows: int(rows), nworkers: 1 + int(seed%3)}
		var buf bytes.Buffer
		if err := e.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		checkDecodes(t, buf.Bytes(), img)
	})
}

// TestEncodeSameBytesOnAnyMachine: the strips depend on the image alone, so
// the number of workers does not change the output.
func TestEncodeSameBytesOnAnyMachine(t *testing.T) {
	img := viewOf(testimage.Desktop(1440, 900))
	var want []byte
	for _, n := range []int{1, 2, 3, 4, 7} {
		var buf bytes.Buffer
		if err := (&Encoder{nworkers: n}).Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = buf.Bytes()
		} else if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("%d workers: %d bytes differ from 1 worker's %d", n, buf.Len(), len(want))
		}
	}
}

// TestEncodeChecksumVerified: image/png verifies the zlib stream's
// Adler-32, combined from the strips', so a wrong one cannot pass unseen.
func TestEncodeChecksumVerified(t *testing.T) {
	img := viewOfSize(testimage.Desktop(1440, 900), 640, 400)
	var buf bytes.Buffer
	if err := (&Encoder{stripRows: 7}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	checkDecodes(t, data, img)
	// The Adler-32 is in the last IDAT chunk, before IEND: 4 bytes of
	// checksum, its chunk's CRC, then the 12 bytes of IEND.
	adler := len(data) - 12 - 4 - 4
	if got, want := string(data[adler-4:adler]), "IDAT"; got != want {
		t.Fatalf("chunk before the checksum is %q, want %q", got, want)
	}
	data[adler] ^= 0x10
	// Keep the chunk's CRC right, so only the zlib checksum is wrong.
	binary.BigEndian.PutUint32(data[adler+4:], crc32.ChecksumIEEE(data[adler-4:adler+4]))
	if _, err := png.Decode(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("decoding a wrong Adler-32: %v, want a checksum error", err)
	}
}

func TestAdler32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = uint8(r.IntN(256))
	}
	data[1000] = 0xff
	for i := 50_000; i < 120_000; i++ {
		data[i] = 0xff // the largest sums between reductions
	}
	for _, cut := range [][]int{{0}, {1}, {5552}, {5553, 5553}, {7, 70_000, 190_000}, {100_000, 100_001, 200_000}} {
		a, prev := uint32(1), 0
		for _, c := range append(cut, len(data)) {
			a = adler32Combine(a, adler32Update(1, data[prev:c]), c-prev)
			prev = c
		}
		if want := adler32.Checksum(data); a != want {
			t.Fatalf("cut at %v: %08x, want %08x", cut, a, want)
		}
	}
}

func TestEncodeFastPathWritesRGB(t *testing.T) {
	var buf bytes.Buffer
	var e Encoder
	if err := e.Encode(&buf, testimage.Desktop(320, 200)); err != nil {
		t.Fatal(err)
	}
	// IHDR: 8-bit samples, colour type 2 (truecolour without alpha).
	if b := buf.Bytes(); string(b[12:16]) != "IHDR" || b[24] != 8 || b[25] != 2 || e.workers[0].fw == nil {
		t.Fatalf("opaque RGBA did not take the RGB path: % x", b[:33])
	}
}

type failWriter struct{ left int }

var errDiskFull = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		return 0, errDiskFull
	}
	f.left -= len(p)
	return len(p), nil
}

func TestEncodeWriteError(t *testing.T) {
	img := randomRGBA(rand.New(rand.NewPCG(1, 1)), 400, 200, true) // incompressible: several strips
	e := Encoder{stripRows: 50}
	for _, n := range []int{0, 40, 70000, 239_000} {
		if err := e.Encode(&failWriter{left: n}, img); !errors.Is(err, errDiskFull) {
			t.Fatalf("fail after %d bytes: %v", n, err)
		}
	}
	var buf bytes.Buffer // the encoder still works afterwards
	if err := e.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	checkDecodes(t, buf.Bytes(), img)
}

// TestEncodeSteadyStateAllocs: after the first call the encoder reuses its
// buffers, compressors and strips; the workers' goroutines are the only
// per-call cost, and the runtime reuses those too.
func TestEncodeSteadyStateAllocs(t *testing.T) {
	img := viewOf(testimage.Desktop(1440, 900))
	for _, n := range []int{1, 2, 4} {
		e := Encoder{nworkers: n}
		if err := e.Encode(io.Discard, img); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 10
		allocs := testing.AllocsPerRun(runs, func() {
			if err := e.Encode(io.Discard, img); err != nil {
				t.Fatal(err)
			}
		})
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / (runs + 1) // AllocsPerRun warms up once
		t.Logf("%d workers: %d bytes, %.1f allocations per encode", n, perRun, allocs)
		if allocs > 2 || perRun > 4<<10 {
			t.Fatalf("%d workers: %d bytes in %.1f allocations per steady-state encode", n, perRun, allocs)
		}
	}
}

// TestEncodeReuseSameBytes: with Reuse, every PNG is byte for byte the one
// a fresh Encoder writes, through small edits (one strip, a strip's last
// row, the first row, nothing), whole changes, other sizes and an image
// with alpha; and a small edit encodes only the strips it reaches.
func TestEncodeReuseSameBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	desk := viewOf(testimage.Desktop(1440, 900))
	img := image.NewRGBA(desk.Rect)
	copy(img.Pix, desk.Pix)
	paint := func(x0, y0, x1, y1 int) {
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				img.SetRGBA(x, y, color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), 0, 0xff})
			}
		}
	}
	reuse := Encoder{Reuse: true, stripRows: 50}
	check := func(what string, img image.Image, stale int) {
		t.Helper()
		var got, want bytes.Buffer
		if err := reuse.Encode(&got, img); err != nil {
			t.Fatal(err)
		}
		if err := (&Encoder{stripRows: 50}).Encode(&want, img); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s: %d bytes with Reuse differ from a fresh encoding's %d", what, got.Len(), want.Len())
		}
		n := 0
		for _, s := range reuse.stale {
			if s {
				n++
			}
		}
		if stale >= 0 && n != stale {
			t.Fatalf("%s: %d strips encoded, want %d", what, n, stale)
		}
	}
	check("first", img, 16)
	check("same", img, 0)
	paint(300, 120, 420, 140) // inside strip 2
	check("small edit", img, 1)
	paint(10, 149, 20, 150) // strip 2's last row: strips 2 and 3
	check("last row of a strip", img, 2)
	paint(0, 0, 1, 1)
	check("first row", img, 1)
	paint(0, 799, 1280, 800)
	check("last row", img, 1)
	paint(0, 0, 1280, 800)
	check("everything", img, 16)
	check("another size", randomRGBA(r, 641, 399, true), 8)
	check("back", img, 16)
	check("alpha", randomRGBA(r, 1280, 800, false), 16)
	check("after alpha", img, 16)
	for range 20 {
		x, y := r.IntN(1280), r.IntN(800)
		paint(x, y, min(x+1+r.IntN(200), 1280), min(y+1+r.IntN(100), 800))
		check("random edit", img, -1)
	}
}
