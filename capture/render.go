package capture

import (
	"fmt"
	"image"
	"io"

	"github.com/agentd-dev/agentd/pngenc"
	"github.com/agentd-dev/agentd/scaling"
)

// Renderer turns a captured screen into the PNG of a view: crop and scale
// (scaling.Scaler), then encode (pngenc.Encoder). It keeps both stages' buffers, so
// steady-state rendering allocates nothing large. The zero Renderer is ready
// to use; it is not safe for concurrent use.
type Renderer struct {
	scaler scaling.Scaler
	enc    pngenc.Encoder
}

// Render writes the image of t, made from the whole-screen capture src, to w
// as a PNG.
func (r *Renderer) Render(w io.Writer, src *image.RGBA, t scaling.Transform) error {
	img, err := r.scaler.Scale(src, t)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := r.enc.Encode(w, img); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	return nil
}
