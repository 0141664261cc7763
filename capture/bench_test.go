//go:build linux

package capture

import (
	"context"
	"testing"

	"github.com/kbinani/screenshot"

	"github.com/agentd-dev/agentd/internal/xvfbtest"

	"github.com/agentd-dev/agentd/internal/cputime"
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
			cputime.Loop(b, func() error {
				_, err := c.Capture(ctx)
				return err
			})
		})
	}
	b.Run("kbinani-raw", func(b *testing.B) {
		cputime.Loop(b, func() error {
			_, err := screenshot.CaptureDisplay(0)
			return err
		})
	})
	b.Run("framehash-shm", func(b *testing.B) {
		c := open(b, srv.Display, MethodSHM)
		cputime.Loop(b, func() error {
			_, err := c.FrameHash(ctx)
			return err
		})
	})
}
