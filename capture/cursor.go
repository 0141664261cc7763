//go:build linux

package capture

import (
	"image"

	"github.com/jezek/xgb/xfixes"
)

// initCursor enables XFixes, whose requests the server refuses until the
// client has announced the version it speaks.
func (x *xconn) initCursor() error {
	if err := initExtension(x.conn, "XFIXES"); err != nil {
		return err
	}
	if _, err := xfixes.QueryVersion(x.conn, 4, 0).Reply(); err != nil {
		return err
	}
	x.cursor = true
	return nil
}

// drawCursor blends the pointer's image (premultiplied ARGB) over img with
// its hotspot at the pointer's position, clipped to the image.
func drawCursor(img *image.RGBA, c *xfixes.GetCursorImageReply) {
	w, h := int(c.Width), int(c.Height)
	if len(c.CursorImage) < w*h {
		return
	}
	x0, y0 := int(c.X)-int(c.Xhot), int(c.Y)-int(c.Yhot)
	r := image.Rect(x0, y0, x0+w, y0+h).Intersect(img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p := c.CursorImage[(y-y0)*w+(x-x0)]
			a := p >> 24
			if a == 0 {
				continue
			}
			d := img.Pix[img.PixOffset(x, y):]
			d[0] = blend(uint8(p>>16), d[0], a)
			d[1] = blend(uint8(p>>8), d[1], a)
			d[2] = blend(uint8(p), d[2], a)
		}
	}
}

// blend is premultiplied "over": src + dst × (1 − α).
func blend(src, dst uint8, a uint32) uint8 {
	return uint8(min(uint32(src)+(uint32(dst)*(255-a)+127)/255, 255))
}
