//go:build linux

// Package capture reads the guest's X11 screen for agentd: whole-screen
// captures into a reused buffer, a frame version that tells a changed frame
// from a repeated one, and a frame hash for waiting until the screen
// settles. With the X server's DAMAGE extension, a capture of a screen
// nobody drew on since the last one costs one round trip.
//
// The X11 path is pure Go (github.com/jezek/xgb): one persistent connection
// and one MIT-SHM segment reused for every frame, so a steady-state capture
// is a single round trip plus a pixel conversion and allocates no pixels.
// When the server cannot attach our segment (a remote server, another IPC
// namespace as between Docker containers) it falls back to plain GetImage,
// which moves every frame through the socket. github.com/kbinani/screenshot
// is the last resort for displays the X11 path does not serve.
package capture

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"image"
	"os"
	"sync"
	"sync/atomic"
)

// Method is how frames are read from the display.
type Method string

// The capture methods. MethodAuto tries them in this order.
const (
	MethodAuto     Method = ""
	MethodSHM      Method = "shm"      // MIT-SHM into a reused shared segment
	MethodGetImage Method = "getimage" // core GetImage; every frame crosses the socket
	MethodKbinani  Method = "kbinani"  // github.com/kbinani/screenshot: reads $DISPLAY; new connection and buffers per frame; not cancellable mid-frame
)

// Options configures Open.
type Options struct {
	// Method forces one method; MethodAuto (the zero value) uses the first
	// that works: shm, then getimage, then kbinani.
	Method Method
	// Cursor draws the pointer into every capture (XFixes; X11 methods only).
	// Off by default: the model is told where it clicked, and a drawn pointer
	// hides what is under it.
	Cursor bool
}

// ErrUnavailable is wrapped by errors that mean the X server cannot be
// reached (not running, restarting, or gone). A later call reconnects.
var ErrUnavailable = errors.New("display unavailable")

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("capture: capturer is closed")

// Capturer captures one display.
//
// All methods are safe for concurrent use; captures are serialised by a
// mutex. The image Capture returns is a buffer the Capturer reuses: it is
// valid only until the next Capture or FrameHash, so a caller that captures
// from several goroutines must finish with each image first (agentd runs one
// request at a time).
type Capturer struct {
	display string
	want    Method
	cursor  bool
	seed    maphash.Seed

	// Read without the lock so Size and Method never wait for a capture.
	size   atomic.Uint64 // w<<32 | h
	method atomic.Value  // Method

	mu     sync.Mutex
	closed bool
	x      *xconn // X11 methods; nil while disconnected
	img    *image.RGBA
	conv   converter
	// current: img holds the screen as the server showed it after the
	// last reset of x's damage, so without a DamageNotify since then it
	// is still the screen.
	current bool
	// version numbers img's contents: it changes when a capture brings
	// pixels that differ from the ones before. hash is FrameHash's hash of
	// version hashed (0: not computed).
	version, hashed, hash uint64
}

// Open connects to display (e.g. ":1"; "" means $DISPLAY). With MethodAuto it
// fails only if no method works.
func Open(display string, opts Options) (*Capturer, error) {
	switch opts.Method {
	case MethodAuto, MethodSHM, MethodGetImage, MethodKbinani:
	default:
		return nil, fmt.Errorf("capture: unknown method %q (want %q, %q or %q)",
			opts.Method, MethodSHM, MethodGetImage, MethodKbinani)
	}
	if display == "" {
		display = os.Getenv("DISPLAY")
	}
	c := &Capturer{display: display, want: opts.Method, cursor: opts.Cursor, seed: maphash.MakeSeed()}
	var err error
	if opts.Method == MethodKbinani {
		err = c.openKbinani()
	} else if err = c.connect(); err != nil && opts.Method == MethodAuto {
		kerr := c.openKbinani()
		if kerr == nil {
			return c, nil
		}
		err = errors.Join(err, kerr)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Size is the screen size in pixels as of the last capture (or Open).
func (c *Capturer) Size() (w, h int) {
	s := c.size.Load()
	return int(s >> 32), int(uint32(s))
}

func (c *Capturer) setSize(w, h int) { c.size.Store(uint64(w)<<32 | uint64(uint32(h))) }

// Method is the method in use; it can change after a reconnect (for
// example to getimage if the new server cannot attach shared memory).
func (c *Capturer) Method() Method {
	m, _ := c.method.Load().(Method)
	return m
}

// Capture returns the whole screen as opaque RGBA, in a buffer that is valid
// until the next Capture or FrameHash (see Capturer) and must not be
// modified: when the X server's DAMAGE extension reports that nothing was
// drawn since the last capture, Capture returns the same buffer after one
// round trip instead of reading the screen again.
//
// If the X server has gone away the error wraps ErrUnavailable, and the next
// call tries to reconnect. Cancelling ctx abandons a capture the server is
// slow to answer; the connection is then reopened on the next call. Give ctx
// a deadline: against a server that hangs without closing its socket,
// nothing else ends the wait (and Close waits for a running Capture).
func (c *Capturer) Capture(ctx context.Context) (*image.RGBA, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.capture(ctx)
}

// FrameHash captures the screen and returns a hash of its pixels, for
// polling until the screen stops changing. Hashes are comparable only within
// one Capturer. It reuses Capture's buffer.
func (c *Capturer) FrameHash(ctx context.Context) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.capture(ctx)
	if err != nil {
		return 0, err
	}
	if c.hashed != c.version {
		c.hash, c.hashed = maphash.Bytes(c.seed, img.Pix), c.version
	}
	return c.hash, nil
}

// FrameVersion numbers the contents of the image the last Capture or
// FrameHash returned: it is the same as for the capture before if and only
// if that one brought the same pixels (on one Capturer). Renderers use it to
// reuse the image they made of the same frame.
func (c *Capturer) FrameVersion() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Close releases the connection and the shared memory segment, waiting
// (briefly) until the server has let go of it. Close waits for a capture in
// progress; it is idempotent.
func (c *Capturer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.x != nil {
		c.x.close(true)
		c.x = nil
	}
	c.img = nil
	return nil
}

func (c *Capturer) capture(ctx context.Context) (*image.RGBA, error) {
	if c.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if c.Method() == MethodKbinani {
		c.version++
		return c.captureKbinani()
	}
	if c.current && c.x != nil && c.x.damage != 0 && !c.x.cursor {
		r, err := c.await(ctx, c.x.sync())
		if err != nil {
			return nil, err
		}
		if r.err == nil && !c.x.drained() && r.w == c.x.w && r.h == c.x.h {
			return c.img, nil
		}
	}
	c.current = false
	for resized := false; ; resized = true {
		if c.x == nil {
			if err := c.connect(); err != nil {
				return nil, err
			}
		}
		x := c.x
		x.resetDamage()
		r, err := c.await(ctx, x.request().wait)
		if err != nil {
			return nil, err
		}
		if r.w > 0 && (r.w != x.w || r.h != x.h) && !resized {
			// The screen was resized (RandR): the image, if any, has the old
			// size. Resize the buffers and capture again.
			if err := c.resize(r.w, r.h); err != nil {
				return nil, err
			}
			continue
		}
		if r.err != nil {
			c.drop()
			if isXError(r.err) {
				return nil, fmt.Errorf("capture: X server on %s refused the capture: %w", c.display, r.err)
			}
			return nil, fmt.Errorf("capture: lost the X server on %s: %w (%w)", c.display, ErrUnavailable, r.err)
		}
		src := r.raw
		if x.seg != nil {
			src = x.seg.data
		} else if len(src) >= 32 {
			src = src[32:] // the reply header
		}
		n := x.w * x.h * 4
		if len(src) < n {
			c.drop()
			return nil, fmt.Errorf("capture: short image from %s: %d bytes, want %d", c.display, len(src), n)
		}
		img, fresh := c.buffer(x.w, x.h)
		if c.conv.convert(img.Pix, src[:n]) || fresh || r.cursor != nil {
			c.version++
		}
		if r.cursor != nil {
			drawCursor(img, r.cursor)
		}
		c.current = true
		return img, nil
	}
}

// await waits for wait's reply, or until ctx is done: then the connection
// is dropped (its replies can no longer be trusted to come), and the next
// call reconnects.
func (c *Capturer) await(ctx context.Context, wait func() reply) (reply, error) {
	if ctx.Done() == nil {
		return wait(), nil // nothing can cancel: spare the goroutine
	}
	done := make(chan reply, 1)
	go func() { done <- wait() }()
	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		c.drop()
		return reply{}, fmt.Errorf("capture: %w", ctx.Err())
	}
}

// connect (re)opens the X11 connection according to the wanted method.
func (c *Capturer) connect() error {
	x, err := dialX(c.display, c.want != MethodGetImage, c.cursor)
	method := MethodSHM
	if errors.Is(err, errNoSHM) && c.want != MethodSHM {
		err, method = nil, MethodGetImage
	}
	if err != nil {
		if x != nil {
			x.close(false)
		}
		return fmt.Errorf("capture: X server on %s: %w", c.display, err)
	}
	if c.want == MethodGetImage {
		method = MethodGetImage
	}
	c.x = x
	c.method.Store(method)
	c.setSize(x.w, x.h)
	return nil
}

// resize adapts the live connection to a new screen size.
func (c *Capturer) resize(w, h int) error {
	x := c.x
	hadSeg := x.seg != nil
	x.detach()
	x.w, x.h = w, h
	c.setSize(w, h)
	if !hadSeg {
		return nil
	}
	if err := x.attach(); err != nil {
		if c.want == MethodSHM {
			c.drop()
			return fmt.Errorf("capture: method shm on %s after a resize: %w", c.display, err)
		}
		c.method.Store(MethodGetImage)
	}
	return nil
}

// drop forgets a connection that failed; the next capture reconnects.
func (c *Capturer) drop() {
	c.current = false
	if c.x != nil {
		c.x.close(false)
		c.x = nil
	}
}

// buffer returns the reused output image, reallocated only on a size change
// (then fresh).
func (c *Capturer) buffer(w, h int) (img *image.RGBA, fresh bool) {
	if c.img == nil || c.img.Rect.Dx() != w || c.img.Rect.Dy() != h {
		c.img = image.NewRGBA(image.Rect(0, 0, w, h))
		fresh = true
	}
	return c.img, fresh
}
