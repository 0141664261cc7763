package pngenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"io"

	"github.com/klauspost/compress/zlib"
)

// serialEncoder is Encoder as it was before the strips, kept as the
// benchmarks' peer and a second opinion for the tests: one fixed filter on
// every row, each row converted to RGB and then filtered byte by byte, one
// zlib stream of github.com/klauspost/compress at e.level, written in
// 64 KiB IDAT chunks. Opaque RGBA and NRGBA only.
type serialEncoder struct {
	zw       *zlib.Writer
	chunks   chunkWriter
	raw, prv []byte // this and the previous row as RGB
	out      []byte // the filter byte and the filtered row
	hdr      header

	// The filter on every row and the zlib level.
	filter byte
	level  int
}

// PNG row filter types beyond those of Encoder.
const (
	filterNone    = 0
	filterAverage = 3
	filterPaeth   = 4
)

// Encode writes img to w as a PNG.
func (e *serialEncoder) Encode(w io.Writer, img image.Image) error {
	pix, stride := rgbaPix(img)
	b := img.Bounds()
	if pix == nil || b.Empty() || !opaque(pix, stride, b.Dx(), b.Dy()) {
		return errors.New("serialEncoder: not an opaque RGBA image")
	}
	if e.level == 0 {
		e.filter, e.level = filterUp, zlib.BestSpeed
	}
	if err := e.encodeRGB(w, pix, stride, b.Dx(), b.Dy()); err != nil {
		return fmt.Errorf("png: %w", err)
	}
	return nil
}

func (e *serialEncoder) encodeRGB(w io.Writer, pix []byte, stride, width, height int) error {
	if _, err := w.Write(e.hdr.set(width, height)); err != nil {
		return err
	}

	e.chunks.reset(w)
	if e.zw == nil {
		zw, err := zlib.NewWriterLevel(&e.chunks, e.level)
		if err != nil {
			return err
		}
		e.zw = zw
	} else {
		e.zw.Reset(&e.chunks)
	}
	n := width * 3
	if cap(e.out) < 1+n {
		e.raw, e.prv, e.out = make([]byte, n), make([]byte, n), make([]byte, 1+n)
	}
	raw, prv, out := e.raw[:n], e.prv[:n], e.out[:1+n]
	clear(prv) // the row above the first is zero
	for y := 0; y < height; y++ {
		toRGB(raw, pix[y*stride:y*stride+width*4])
		e.filterRow(out, raw, prv)
		if _, err := e.zw.Write(out); err != nil {
			return err
		}
		raw, prv = prv, raw
	}
	if err := e.zw.Close(); err != nil {
		return err
	}
	if err := e.chunks.flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, iend)
	return err
}

// filterRow writes the filter byte and raw filtered against the previous
// row prv into out.
func (e *serialEncoder) filterRow(out, raw, prv []byte) {
	out[0] = e.filter
	o := out[1:]
	o, prv = o[:len(raw)], prv[:len(raw)]
	switch e.filter {
	case filterNone:
		copy(o, raw)
	case filterUp:
		for i := range o {
			o[i] = raw[i] - prv[i]
		}
	case filterSub:
		copy(o[:3], raw)
		for i := 3; i < len(o); i++ {
			o[i] = raw[i] - raw[i-3]
		}
	case filterAverage:
		for i := 0; i < 3; i++ {
			o[i] = raw[i] - prv[i]/2
		}
		for i := 3; i < len(o); i++ {
			o[i] = raw[i] - uint8((int(raw[i-3])+int(prv[i]))/2)
		}
	case filterPaeth:
		for i := 0; i < 3; i++ {
			o[i] = raw[i] - prv[i]
		}
		for i := 3; i < len(o); i++ {
			o[i] = raw[i] - paeth(raw[i-3], prv[i], prv[i-3])
		}
	}
}

func paeth(a, b, c uint8) uint8 {
	pc := int(c)
	pa := int(b) - pc
	pb := int(a) - pc
	pc = abs(pa + pb)
	pa, pb = abs(pa), abs(pb)
	if pa <= pb && pa <= pc {
		return a
	} else if pb <= pc {
		return b
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// toRGB drops the alpha byte of each pixel.
func toRGB(dst, src []byte) {
	dst = dst[:len(src)/4*3]
	for len(src) >= 4 && len(dst) >= 3 {
		dst[0], dst[1], dst[2] = src[0], src[1], src[2]
		src, dst = src[4:], dst[3:]
	}
}

// opaque reports whether every alpha byte is 255, two pixels per word.
func opaque(pix []byte, stride, width, height int) bool {
	const a2 = 0xff000000ff000000
	for y := 0; y < height; y++ {
		row := pix[y*stride : y*stride+width*4]
		for len(row) >= 8 {
			if binary.LittleEndian.Uint64(row)&a2 != a2 {
				return false
			}
			row = row[8:]
		}
		if len(row) == 4 && row[3] != 0xff {
			return false
		}
	}
	return true
}

// chunkSize is the data size of a full IDAT chunk.
const chunkSize = 64 << 10

// chunkWriter turns the zlib stream into IDAT chunks of up to chunkSize
// bytes, each written with one Write call.
type chunkWriter struct {
	w   io.Writer
	buf []byte // length, "IDAT", data, room for the CRC
	err error
}

func (c *chunkWriter) reset(w io.Writer) {
	if c.buf == nil {
		c.buf = make([]byte, 8, 8+chunkSize+4)
	}
	c.w, c.buf, c.err = w, c.buf[:8], nil
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && c.err == nil {
		k := copy(c.buf[len(c.buf):8+chunkSize], p)
		c.buf, p = c.buf[:len(c.buf)+k], p[k:]
		if len(c.buf) == 8+chunkSize {
			c.err = c.flush()
		}
	}
	if c.err != nil {
		return 0, c.err
	}
	return n, nil
}

// flush writes the buffered data, if any, as one IDAT chunk.
func (c *chunkWriter) flush() error {
	if c.err != nil || len(c.buf) == 8 {
		return c.err
	}
	binary.BigEndian.PutUint32(c.buf, uint32(len(c.buf)-8))
	copy(c.buf[4:], "IDAT")
	c.buf = binary.BigEndian.AppendUint32(c.buf, crc32.ChecksumIEEE(c.buf[4:]))
	_, err := c.w.Write(c.buf)
	c.buf = c.buf[:8]
	return err
}
