package pngenc

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"testing"

	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/internal/testimage"
)

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
				cputime.Loop(b, func() error {
					buf.Reset()
					return v.enc(&buf, im.img)
				})
				b.ReportMetric(float64(buf.Len()), "png-bytes")
			})
		}
	}
}
