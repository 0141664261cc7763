//go:build linux

package guestprobe

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"

	"github.com/kbinani/screenshot"

	"github.com/agentd-dev/agentd/capture"
	"github.com/agentd-dev/agentd/capture/pngenc"
	"github.com/agentd-dev/agentd/capture/render"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// Screen holds the probes that read display with agentd's own packages and
// with kbinani/screenshot (which reads $DISPLAY: the probe process gets the
// guest's). Close releases it.
type Screen struct {
	Probes      map[string]Func
	Unavailable map[string]string

	capturer *capture.Capturer
}

// OpenScreen connects to display the way agentd does (capture.MethodAuto)
// and prepares the probes. Encode probes work on one frame captured here, so
// they time encoding alone.
func OpenScreen(ctx context.Context, display string) (*Screen, error) {
	c, err := capture.Open(display, capture.Options{})
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	frame, err := c.Capture(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("probe: first capture: %w", err)
	}
	w, h := frame.Rect.Dx(), frame.Rect.Dy()
	// The frame is Capture's reused buffer: keep a copy for the encoders.
	still := image.NewRGBA(frame.Rect)
	copy(still.Pix, frame.Pix)
	fit, err := scaling.New(scaling.Size{W: w, H: h}, nil, probe.FitWidth, probe.FitHeight, true)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("probe: %w", err)
	}
	scaler := scaling.Scaler{Full: true} // the same frame every time: scale all of it
	scaled, err := scaler.Scale(still, fit)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("probe: %w", err)
	}
	stillScaled := image.NewRGBA(scaled.Rect)
	copy(stillScaled.Pix, scaled.Pix)

	var enc pngenc.Encoder
	var renderer render.Renderer
	var out counter
	s := &Screen{capturer: c, Unavailable: map[string]string{}}
	s.Probes = map[string]Func{
		probe.Capture: func(ctx context.Context) (int, error) {
			_, err := c.Capture(ctx)
			return 0, err
		},
		probe.ScaleFit: func(context.Context) (int, error) {
			_, err := scaler.Scale(still, fit)
			return 0, err
		},
		probe.EncodeNative: func(context.Context) (int, error) { return out.encode(&enc, still) },
		probe.EncodeFit:    func(context.Context) (int, error) { return out.encode(&enc, stillScaled) },
		probe.PipelineFit: func(ctx context.Context) (int, error) {
			img, err := c.Capture(ctx)
			if err != nil {
				return 0, err
			}
			out.n = 0
			err = renderer.Render(&out, img, fit)
			return out.n, err
		},
	}
	if n := screenshot.NumActiveDisplays(); n == 0 {
		s.Unavailable[probe.KbinaniCapture] = "kbinani/screenshot finds no display (it needs XINERAMA)"
		s.Unavailable[probe.KbinaniPNG] = s.Unavailable[probe.KbinaniCapture]
	} else {
		bounds := image.Rect(0, 0, w, h)
		s.Probes[probe.KbinaniCapture] = func(context.Context) (int, error) {
			_, err := screenshot.CaptureRect(bounds)
			return 0, err
		}
		var buf bytes.Buffer
		s.Probes[probe.KbinaniPNG] = func(context.Context) (int, error) {
			img, err := screenshot.CaptureRect(bounds)
			if err != nil {
				return 0, err
			}
			buf.Reset()
			err = png.Encode(&buf, img)
			return buf.Len(), err
		}
	}
	return s, nil
}

// Close releases the display connection.
func (s *Screen) Close() error { return s.capturer.Close() }

// counter is a writer that only counts, so encoders are timed without a
// copy of their output.
type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}

func (c *counter) encode(enc *pngenc.Encoder, img image.Image) (int, error) {
	c.n = 0
	err := enc.Encode(c, img)
	return c.n, err
}
