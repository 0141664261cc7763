package capture

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zlib"

	"github.com/agentd-dev/agentd/scaling"

	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/internal/testimage"
)

// viewOf scales a 1440×900 desktop to what the model sees at 1280×800.
func viewOf(src *image.RGBA) *image.RGBA {
	t, err := scaling.New(scaling.Size{W: 1440, H: 900}, nil, 1280, 800, true)
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

func variants() map[string]func() *Encoder {
	return map[string]func() *Encoder{
		"default": func() *Encoder { return &Encoder{} },
		"none":    func() *Encoder { return &Encoder{filter: filterNone, level: zlib.BestSpeed} },
		"sub":     func() *Encoder { return &Encoder{filter: filterSub, level: zlib.BestSpeed} },
		"paeth":   func() *Encoder { return &Encoder{filter: filterPaeth, level: 2} },
	}
}

func TestEncodeDecodesExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	big := testimage.Desktop(1440, 900)
	nrgba := image.NewNRGBA(image.Rect(0, 0, 37, 11))
	copy(nrgba.Pix, randomRGBA(r, 37, 11, true).Pix)
	images := map[string]image.Image{
		"desktop 1440x900":  big,
		"view 1280x800":     viewOf(big),
		"crop (stride)":     big.SubImage(image.Rect(101, 53, 700, 400)),
		"1x1":               randomRGBA(r, 1, 1, true),
		"1x9":               randomRGBA(r, 1, 9, true),
		"odd random":        randomRGBA(r, 333, 77, true),
		"nrgba":             nrgba,
		"translucent rgba":  randomRGBA(r, 50, 40, false), // image/png fallback
		"gray (fallback)":   image.NewGray(image.Rect(0, 0, 20, 10)),
		"wide (>64K chunk)": randomRGBA(r, 3000, 40, true),
	}
	for vname, mk := range variants() {
		enc := mk() // one encoder for all images: state must not leak between them
		for name, img := range images {
			if vname != "default" && img.Bounds().Dx() >= 1280 {
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

func TestEncodeFastPathWritesRGB(t *testing.T) {
	var buf bytes.Buffer
	var e Encoder
	if err := e.Encode(&buf, testimage.Desktop(320, 200)); err != nil {
		t.Fatal(err)
	}
	// IHDR: 8-bit samples, colour type 2 (truecolour without alpha).
	if b := buf.Bytes(); string(b[12:16]) != "IHDR" || b[24] != 8 || b[25] != 2 || e.zw == nil {
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
	img := randomRGBA(rand.New(rand.NewPCG(1, 1)), 400, 200, true) // incompressible: > 2 IDAT chunks
	var e Encoder
	for _, n := range []int{0, 40, 70000} {
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
// buffers and compressor.
func TestEncodeSteadyStateAllocs(t *testing.T) {
	img := viewOf(testimage.Desktop(1440, 900))
	var e Encoder
	if err := e.Encode(io.Discard, img); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 5
	for range runs {
		if err := e.Encode(io.Discard, img); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perRun := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("%d bytes, %d allocations per encode", perRun, (after.Mallocs-before.Mallocs)/runs)
	if perRun > 4<<10 {
		t.Fatalf("%d bytes allocated per steady-state encode", perRun)
	}
}

func BenchmarkEncode(b *testing.B) {
	big := testimage.Desktop(1440, 900)
	imgs := []struct {
		name string
		img  *image.RGBA
	}{{"1440x900", big}, {"1280x800", viewOf(big)}}
	type variant struct {
		name string
		enc  func(io.Writer, image.Image) error
	}
	for _, im := range imgs {
		stdFast := &png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &bufferPool{}}
		stdDefault := &png.Encoder{BufferPool: &bufferPool{}}
		vs := []variant{
			{"std-bestspeed", stdFast.Encode},
			{"std-default", stdDefault.Encode},
			{"up-l1", (&Encoder{}).Encode},
			{"up-l2", (&Encoder{filter: filterUp, level: 2}).Encode},
			{"up-l3", (&Encoder{filter: filterUp, level: 3}).Encode},
			{"paeth-l1", (&Encoder{filter: filterPaeth, level: 1}).Encode},
			{"sub-l1", (&Encoder{filter: filterSub, level: 1}).Encode},
			{"none-l1", (&Encoder{filter: filterNone, level: 1}).Encode},
		}
		for _, v := range vs {
			b.Run(fmt.Sprintf("%s/%s", im.name, v.name), func(b *testing.B) {
				var buf bytes.Buffer
				b.ReportAllocs()
				cpu := cputime.Start()
				for b.Loop() {
					buf.Reset()
					if err := v.enc(&buf, im.img); err != nil {
						b.Fatal(err)
					}
				}
				cpu.Report(b)
				b.ReportMetric(float64(buf.Len()), "png-bytes")
			})
		}
	}
}
