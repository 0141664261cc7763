// Command filters compares the resampling filters on screenshots: for each
// native screenshot given (default: the bench's test desktop at 1440×900)
// and each filter, the size of the PNG the model would get when the screen
// is fitted into 1280×800, the time to scale and to encode it (medians), and
// with -crops a magnified crop of each result side by side, for judging
// small text. It prints a Markdown table.
//
//	go run ./scaling/cmd/filters [-crops docs/images] [-crop X,Y,WxH] [shot.png ...]
//
// "catmull-rom-clamped" is Catmull-Rom with every output channel clamped to
// the range of the 2×2 source pixels nearest the output pixel's centre (the
// usual anti-ringing step); it is made here, after the Scaler, to judge its
// bytes and looks, so its scale time is not comparable.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/capture/pngenc"
	"github.com/agentd-dev/agentd/internal/testimage"
	"github.com/agentd-dev/agentd/scaling"
)

func main() {
	crops := flag.String("crops", "", "write magnified crops into this directory")
	cropArg := flag.String("crop", "", "the crop in native pixels, X,Y,WxH (default: 100x72 of the desktop's first paragraph; of a screenshot, its top left corner)")
	runs := flag.Int("runs", 15, "timed runs per figure")
	flag.Parse()
	if err := run(flag.Args(), *crops, *cropArg, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "filters:", err)
		os.Exit(1)
	}
}

type variant struct {
	name   string
	filter scaling.Filter
	clamp  bool
}

var variants = []variant{
	{"nearest", scaling.Nearest, false},
	{"area (box)", scaling.Area, false},
	{"catmull-rom", scaling.CatmullRom, false},
	{"catmull-rom-clamped", scaling.CatmullRom, true},
	{"triangle", scaling.Triangle, false},
}

func run(files []string, crops, cropArg string, runs int) error {
	type input struct {
		name string
		img  *image.RGBA
		crop image.Rectangle
	}
	var ins []input
	if len(files) == 0 {
		// The browser-like window's first paragraph.
		ins = append(ins, input{"bench-desktop", testimage.Desktop(1440, 900), image.Rect(66, 172, 166, 244)})
	}
	for _, f := range files {
		img, err := readPNG(f)
		if err != nil {
			return err
		}
		ins = append(ins, input{strings.TrimSuffix(filepath.Base(f), ".png"), img, image.Rect(0, 0, 100, 72)})
	}
	if cropArg != "" {
		var r image.Rectangle
		var w, h int
		if _, err := fmt.Sscanf(cropArg, "%d,%d,%dx%d", &r.Min.X, &r.Min.Y, &w, &h); err != nil {
			return fmt.Errorf("-crop %q: want X,Y,WxH", cropArg)
		}
		for i := range ins {
			ins[i].crop = image.Rect(r.Min.X, r.Min.Y, r.Min.X+w, r.Min.Y+h)
		}
	}
	fmt.Println("| screen | filter | PNG bytes | vs native | scale p50 | encode p50 |")
	fmt.Println("|---|---|---|---|---|---|")
	var enc pngenc.Encoder
	var buf bytes.Buffer
	for _, in := range ins {
		b := in.img.Bounds()
		encode := func(img *image.RGBA) (int, time.Duration, error) {
			var ds []time.Duration
			for range runs {
				buf.Reset()
				start := time.Now()
				if err := enc.Encode(&buf, img); err != nil {
					return 0, 0, err
				}
				ds = append(ds, time.Since(start))
			}
			return buf.Len(), median(ds), nil
		}
		nativeBytes, nativeEnc, err := encode(in.img)
		if err != nil {
			return err
		}
		fmt.Printf("| %s %dx%d | none (native) | %d | 1.00 | | %s |\n", in.name, b.Dx(), b.Dy(), nativeBytes, ms(nativeEnc))
		t, err := scaling.New(scaling.Size{W: b.Dx(), H: b.Dy()}, nil, 1280, 800, true)
		if err != nil {
			return err
		}
		panels := []*image.RGBA{magnify(in.img, in.crop, 1)}
		for _, v := range variants {
			s := scaling.Scaler{Filter: v.filter}
			var ds []time.Duration
			var out *image.RGBA
			for range runs {
				start := time.Now()
				if out, err = s.Scale(in.img, t); err != nil {
					return err
				}
				ds = append(ds, time.Since(start))
			}
			scaleTime := ms(median(ds))
			if v.clamp {
				out = clampToNearest(out, in.img, t)
				scaleTime = "(not comparable)"
			}
			n, encTime, err := encode(out)
			if err != nil {
				return err
			}
			fmt.Printf("| %s %dx%d | %s | %d | %.2f | %s | %s |\n", in.name, b.Dx(), b.Dy(), v.name, n,
				float64(n)/float64(nativeBytes), scaleTime, ms(encTime))
			panels = append(panels, magnify(out, scaled(in.crop, t), float64(t.Crop.W)/float64(t.Image.W)))
		}
		if crops != "" {
			if err := writeSideBySide(filepath.Join(crops, "filters-"+in.name+".png"), panels); err != nil {
				return err
			}
		}
	}
	return nil
}

func readPNG(name string) (*image.RGBA, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
	draw.Draw(out, out.Rect, img, img.Bounds().Min, draw.Src)
	return out, nil
}

// clampToNearest clamps each channel of out to the range of the 2×2 source
// pixels nearest the centre of the output pixel's footprint.
func clampToNearest(out, src *image.RGBA, t scaling.Transform) *image.RGBA {
	res := image.NewRGBA(out.Rect)
	copy(res.Pix, out.Pix)
	sx := float64(t.Crop.W) / float64(t.Image.W)
	sy := float64(t.Crop.H) / float64(t.Image.H)
	for y := range out.Rect.Dy() {
		cy := (float64(y)+0.5)*sy - 0.5
		y0 := min(max(int(cy), 0), src.Rect.Dy()-1)
		y1 := min(y0+1, src.Rect.Dy()-1)
		for x := range out.Rect.Dx() {
			cx := (float64(x)+0.5)*sx - 0.5
			x0 := min(max(int(cx), 0), src.Rect.Dx()-1)
			x1 := min(x0+1, src.Rect.Dx()-1)
			i := res.PixOffset(x, y)
			for c := range 3 {
				near := []uint8{src.Pix[src.PixOffset(x0, y0)+c], src.Pix[src.PixOffset(x1, y0)+c],
					src.Pix[src.PixOffset(x0, y1)+c], src.Pix[src.PixOffset(x1, y1)+c]}
				res.Pix[i+c] = min(max(res.Pix[i+c], slices.Min(near)), slices.Max(near))
			}
		}
	}
	return res
}

// scaled is the part of the image that shows r of the screen.
func scaled(r image.Rectangle, t scaling.Transform) image.Rectangle {
	x0, y0, _ := t.ToImage(r.Min.X, r.Min.Y)
	x1, y1, _ := t.ToImage(r.Max.X-1, r.Max.Y-1)
	return image.Rect(x0, y0, x1+1, y1+1)
}

// magnify cuts r out of img and enlarges it by nearest neighbour so that a
// screen pixel becomes 4×4 pixels at any scale (a scaled image's pixel is
// factor screen pixels wide).
func magnify(img *image.RGBA, r image.Rectangle, factor float64) *image.RGBA {
	const zoom = 4
	w, h := int(float64(r.Dx())*factor*zoom+0.5), int(float64(r.Dy())*factor*zoom+0.5)
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		sy := r.Min.Y + min(int(float64(y)/(factor*zoom)), r.Dy()-1)
		for x := range w {
			sx := r.Min.X + min(int(float64(x)/(factor*zoom)), r.Dx()-1)
			copy(out.Pix[out.PixOffset(x, y):][:4], img.Pix[img.PixOffset(sx, sy):][:4])
		}
	}
	return out
}

// writeSideBySide writes the panels left to right, a grey gap between them.
func writeSideBySide(name string, panels []*image.RGBA) error {
	const gap = 8
	w, h := 0, 0
	for _, p := range panels {
		w += p.Rect.Dx() + gap
		h = max(h, p.Rect.Dy())
	}
	out := image.NewRGBA(image.Rect(0, 0, w-gap, h))
	draw.Draw(out, out.Rect, image.NewUniform(color.Gray{Y: 96}), image.Point{}, draw.Src)
	x := 0
	for _, p := range panels {
		draw.Draw(out, p.Rect.Add(image.Pt(x, 0)), p, image.Point{}, draw.Src)
		x += p.Rect.Dx() + gap
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return errors.Join(os.WriteFile(name, buf.Bytes(), 0o644))
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
