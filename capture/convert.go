package capture

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"

	"github.com/agentd-dev/agentd/internal/workpool"
)

// bgrxToRGBA converts X11 ZPixmap pixels (32 bits, little-endian: bytes B, G,
// R, pad) to RGBA with alpha forced to 255 (the pad byte is undefined). It
// works on two pixels per 64-bit word (swap R and B, keep G, set A), four
// words per iteration: ~30% faster than one, 3-4 GB/s here.
//
// It reports whether dst held anything else before: comparing with the
// words it overwrites, which are in cache for the store anyway, tells a
// changed frame from a repeated one for almost nothing (a hash of the frame
// would be another full pass: 1.5 ms at 1440×900 here).
// len(dst) must be at least len(src); len(src) is a multiple of 4.
func bgrxToRGBA(dst, src []byte) (changed bool) {
	const (
		g  = 0x0000ff000000ff00
		rb = 0x000000ff000000ff
		a  = 0xff000000ff000000
	)
	dst = dst[:len(src)]
	var diff uint64
	for len(src) >= 32 && len(dst) >= 32 {
		p0 := binary.LittleEndian.Uint64(src[0:8])
		p1 := binary.LittleEndian.Uint64(src[8:16])
		p2 := binary.LittleEndian.Uint64(src[16:24])
		p3 := binary.LittleEndian.Uint64(src[24:32])
		q0 := p0&g | (p0&rb)<<16 | (p0>>16)&rb | a
		q1 := p1&g | (p1&rb)<<16 | (p1>>16)&rb | a
		q2 := p2&g | (p2&rb)<<16 | (p2>>16)&rb | a
		q3 := p3&g | (p3&rb)<<16 | (p3>>16)&rb | a
		diff |= binary.LittleEndian.Uint64(dst[0:8]) ^ q0 | binary.LittleEndian.Uint64(dst[8:16]) ^ q1 |
			binary.LittleEndian.Uint64(dst[16:24]) ^ q2 | binary.LittleEndian.Uint64(dst[24:32]) ^ q3
		binary.LittleEndian.PutUint64(dst[0:8], q0)
		binary.LittleEndian.PutUint64(dst[8:16], q1)
		binary.LittleEndian.PutUint64(dst[16:24], q2)
		binary.LittleEndian.PutUint64(dst[24:32], q3)
		src, dst = src[32:], dst[32:]
	}
	for len(src) >= 4 && len(dst) >= 4 {
		p := binary.LittleEndian.Uint32(src)
		q := p&0xff00 | (p&0xff)<<16 | (p>>16)&0xff | 0xff000000
		diff |= uint64(binary.LittleEndian.Uint32(dst) ^ q)
		binary.LittleEndian.PutUint32(dst, q)
		src, dst = src[4:], dst[4:]
	}
	return diff != 0
}

// converter runs bgrxToRGBA over a whole frame in bands on up to
// runtime.GOMAXPROCS(0) goroutines (internal/workpool), started for each
// call and waited for: the pass is bound by memory bandwidth, which one
// core does not use up.
type converter struct {
	pool     workpool.Pool
	dst, src []byte
	changed  atomic.Bool
}

// convertBand is the bytes of one band: 256 KiB, about 45 rows at 1440
// wide, so both workers keep busy when another process takes a core.
const convertBand = 256 << 10

// convert is bgrxToRGBA on the whole frame.
func (c *converter) convert(dst, src []byte) (changed bool) {
	bands := (len(src) + convertBand - 1) / convertBand
	c.dst, c.src = dst, src
	c.changed.Store(false)
	c.pool.Run(min(runtime.GOMAXPROCS(0), bands), bands, (*convertJob)(c))
	c.dst, c.src = nil, nil
	return c.changed.Load()
}

// convertJob is a converter as the workpool.Job of its current call: one
// unit is one band.
type convertJob converter

func (j *convertJob) Do(_, band int) {
	lo := band * convertBand
	hi := min(lo+convertBand, len(j.src))
	if bgrxToRGBA(j.dst[lo:hi], j.src[lo:hi]) {
		j.changed.Store(true)
	}
}
