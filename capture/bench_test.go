//go:build linux

package capture

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"testing"

	"github.com/kbinani/screenshot"

	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/scaling"

	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/internal/testimage"
)

// BenchmarkCapture compares the methods on one 1440×900 server, with
// kbinani's own CaptureDisplay as the baseline the fallback wraps.
func BenchmarkCapture(b *testing.B) {
	srv := xvfbtest.Start(b, 1440, 900)
	paint(b, srv.Display)
	b.Setenv("DISPLAY", srv.Display)
	ctx := context.Background()
	for _, m := range []Method{MethodSHM, MethodGetImage, MethodKbinani} {
		b.Run(string(m), func(b *testing.B) {
			c := open(b, srv.Display, m)
			b.ReportAllocs()
			cpu := cputime.Start()
			for b.Loop() {
				if _, err := c.Capture(ctx); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report(b)
		})
	}
	b.Run("kbinani-raw", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cputime.Start()
		for b.Loop() {
			if _, err := screenshot.CaptureDisplay(0); err != nil {
				b.Fatal(err)
			}
		}
		cpu.Report(b)
	})
	b.Run("framehash-shm", func(b *testing.B) {
		c := open(b, srv.Display, MethodSHM)
		b.ReportAllocs()
		cpu := cputime.Start()
		for b.Loop() {
			if _, err := c.FrameHash(ctx); err != nil {
				b.Fatal(err)
			}
		}
		cpu.Report(b)
	})
}

// BenchmarkScreenshot is the daemon's whole path for one screenshot: capture
// 1440×900, fit into 1280×800, encode.
func BenchmarkScreenshot(b *testing.B) {
	srv := xvfbtest.Start(b, 1440, 900)
	paint(b, srv.Display)
	c := open(b, srv.Display, MethodSHM)
	t, err := scaling.New(scaling.Size{W: 1440, H: 900}, nil, 1280, 800, true)
	if err != nil {
		b.Fatal(err)
	}
	var r Renderer
	ctx := context.Background()
	b.ReportAllocs()
	cpu := cputime.Start()
	for b.Loop() {
		img, err := c.Capture(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Render(io.Discard, img, t); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b)
}

// BenchmarkPNG compares Encoder ("new") with its peers in one run, on the
// desktop and on the view the model is sent: image/png, the previous encoder
// ("old-…", serialEncoder: one stream, a fixed filter), Encoder with Up
// alone (the strips without the filter choice), and in one strip (the
// filter choice without the strips). With -cpu 1,2, "-2" has two workers.
func BenchmarkPNG(b *testing.B) {
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
		vs := []variant{
			{"image-png-bestspeed", stdFast.Encode},
			{"old-up", (&serialEncoder{filter: filterUp, level: 1}).Encode},
			{"old-paeth", (&serialEncoder{filter: filterPaeth, level: 1}).Encode},
			{"old-up-l2", (&serialEncoder{filter: filterUp, level: 2}).Encode},
			{"new-up", (&Encoder{mode: filterOnlyUp}).Encode},
			{"new-1strip", (&Encoder{stripRows: 1 << 20}).Encode},
			{"new", (&Encoder{}).Encode},
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
