package agentd

import (
	"fmt"
	"image"
	"io"

	"github.com/agentd-dev/agentd/scaling"
)

// Encoder writes an image as PNG.
type Encoder interface {
	Encode(w io.Writer, img image.Image) error
}

// Pipeline is the Imager agentd uses: scale (reusing buffers), then encode.
// Like the session worker that calls it, it is not safe for concurrent use.
type Pipeline struct {
	Scaler  scaling.Scaler
	Encoder Encoder
}

// Render implements Imager.
func (p *Pipeline) Render(w io.Writer, src *image.RGBA, t scaling.Transform) error {
	img, err := p.Scaler.Scale(src, t)
	if err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	if err := p.Encoder.Encode(w, img); err != nil {
		return fmt.Errorf("encode png: %w", err)
	}
	return nil
}
