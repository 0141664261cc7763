package codeexec

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"testing"
)

func frameBytes(head string, payload []byte) []byte {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(head)))
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	return append(append(hdr[:], head...), payload...)
}

// FuzzReadFrame: whatever the code writes to the worker's pipe, reading it
// ends in frames or an error, and an image frame decodes or is refused,
// never a panic.
func FuzzReadFrame(f *testing.F) {
	var pngBuf bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.NRGBA{200, 10, 10, 255})
	_ = png.Encode(&pngBuf, img)
	f.Add(frameBytes(`{"op":"out","text":"hé\n"}`, nil))
	f.Add(frameBytes(`{"op":"image","format":"rgba","width":1,"height":1}`, []byte{1, 2, 3, 255}))
	f.Add(frameBytes(`{"op":"image","format":"png"}`, pngBuf.Bytes()))
	f.Add(frameBytes(`{"op":"act","action":{"type":"click","x":1,"y":2},"failsafe":true}`, nil))
	f.Add(frameBytes(`{"op":"image","format":"rgba","width":-1,"height":0}`, nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			fr, err := readFrame(r)
			if err != nil {
				return
			}
			if fr.head.Op == "image" {
				if img, err := decodeImage(fr); err == nil && img.Bounds().Empty() {
					t.Fatalf("an empty image was accepted: %+v", fr.head)
				}
			}
		}
	})
}
