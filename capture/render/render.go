// Package render turns a captured screen into the PNG of a view: crop and
// scale (scaling.Scaler), then encode (pngenc.Encoder), and when the frame
// and the view are those of the last call, the PNG already made.
package render

import (
	"fmt"
	"image"
	"io"

	"github.com/agentd-dev/agentd/capture/pngenc"
	"github.com/agentd-dev/agentd/scaling"
)

// Frames tells frames apart: FrameVersion numbers the contents of the
// image the last capture returned, and is the same for a capture that
// brought the same pixels (capture.Capturer).
type Frames interface {
	FrameVersion() uint64
}

// Renderer renders screenshots. It keeps both stages' buffers, so
// steady-state rendering allocates nothing large, the last images it
// encoded, so a small change re-encodes little (pngenc.Encoder.Reuse), and
// the last PNG it made:
// a screenshot of a screen that has not changed since, in the same view,
// costs one copy of the PNG. The zero Renderer renders every time; it is not
// safe for concurrent use.
type Renderer struct {
	// Frames, if set, is the source of every image given to Render, which
	// must be the image of its last capture.
	Frames Frames

	scaler scaling.Scaler
	// One encoder for the native view and one for the others, each with
	// Reuse: a screenshot after a small change re-encodes only the strips
	// it reaches, even when native and scaled views alternate.
	native, scaled pngenc.Encoder

	// The last PNG, of frame version at view t (valid if ok).
	ok      bool
	version uint64
	t       scaling.Transform
	png     buffer
}

// Render writes the image of t, made from the whole-screen capture src, to w
// as a PNG.
func (r *Renderer) Render(w io.Writer, src *image.RGBA, t scaling.Transform) error {
	var version uint64
	if r.Frames != nil {
		version = r.Frames.FrameVersion()
		if r.ok && version == r.version && t == r.t {
			if _, err := w.Write(r.png); err != nil {
				return fmt.Errorf("render: %w", err)
			}
			return nil
		}
	}
	r.ok = false
	img, err := r.scaler.Scale(src, t)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	r.png = r.png[:0]
	enc := &r.scaled
	if t.Identity() {
		enc = &r.native
	}
	enc.Reuse = true
	if err := enc.Encode(&r.png, img); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if _, err := w.Write(r.png); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	r.ok, r.version, r.t = r.Frames != nil, version, t
	return nil
}

// buffer is an append-only writer that keeps its array between calls.
type buffer []byte

func (b *buffer) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}
