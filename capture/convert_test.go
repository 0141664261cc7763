package capture

import (
	"encoding/binary"
	"testing"
)

func TestBGRXToRGBA(t *testing.T) {
	// Three pixels (an odd count exercises the tail): B, G, R, pad.
	src := []byte{1, 2, 3, 0x55, 10, 20, 30, 0, 0xff, 0x80, 0x00, 0xaa}
	dst := make([]byte, len(src))
	bgrxToRGBA(dst, src)
	want := []byte{3, 2, 1, 0xff, 30, 20, 10, 0xff, 0x00, 0x80, 0xff, 0xff}
	if string(dst) != string(want) {
		t.Fatalf("got % x\nwant % x", dst, want)
	}
	for n := 0; n < 20; n++ { // every length against a per-pixel reference
		src := make([]byte, 4*n)
		for i := range src {
			src[i] = byte(i*37 + 11)
		}
		dst := make([]byte, len(src))
		bgrxToRGBA(dst, src)
		for i := 0; i < n; i++ {
			p := binary.LittleEndian.Uint32(src[4*i:])
			if dst[4*i] != byte(p>>16) || dst[4*i+1] != byte(p>>8) || dst[4*i+2] != byte(p) || dst[4*i+3] != 0xff {
				t.Fatalf("n=%d pixel %d: % x from % x", n, i, dst[4*i:4*i+4], src[4*i:4*i+4])
			}
		}
	}
}

// TestConvertChanged: the whole-frame conversion is bgrxToRGBA's, and it
// reports a change wherever in the frame it is, even one byte in the last
// band.
func TestConvertChanged(t *testing.T) {
	src := make([]byte, 1440*900*4+8) // a partial last band
	for i := range src {
		src[i] = byte(i * 13)
	}
	want := make([]byte, len(src))
	bgrxToRGBA(want, src)
	var c converter
	dst := make([]byte, len(src))
	if !c.convert(dst, src) || string(dst) != string(want) {
		t.Fatal("first conversion: not changed, or not bgrxToRGBA's pixels")
	}
	if c.convert(dst, src) {
		t.Fatal("the same frame again: changed")
	}
	for _, at := range []int{0, convertBand + 5, len(src) - 2} {
		src[at]++
		if !c.convert(dst, src) {
			t.Fatalf("a byte changed at %d: not reported", at)
		}
	}
}

func BenchmarkBGRXToRGBA(b *testing.B) {
	src := make([]byte, 1440*900*4)
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			bgrxToRGBA(dst, src)
		}
	})
	b.Run("bands", func(b *testing.B) {
		var c converter
		for b.Loop() {
			c.convert(dst, src)
		}
	})
}
