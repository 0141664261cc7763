//go:build linux

package capture

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"
)

// xconn is one live connection to the X server, with its MIT-SHM segment
// when the server could attach it.
type xconn struct {
	conn   *xgb.Conn
	root   xproto.Window
	w, h   int
	seg    *segment      // nil: plain GetImage
	cursor bool          // also fetch the pointer's image (XFixes)
	damage damage.Damage // on the root window; 0 without the DAMAGE extension
}

// segment is a System V shared memory segment attached on both sides.
type segment struct {
	id   int
	seg  shm.Seg
	data []byte
}

// dialX connects to display and checks that its root window is in the only
// pixel format we convert: 32 bits per pixel, little-endian, 8-bit BGR
// channels (every depth-24/32 TrueColor server on x86 and arm). With cursor
// it sets up XFixes. With useSHM it also sets up a segment for the whole
// screen, returning errNoSHM (wrapped) with a connection still usable for
// GetImage if the server cannot attach it.
func dialX(display string, useSHM, cursor bool) (*xconn, error) {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("%w (%w)", ErrUnavailable, err)
	}
	x := &xconn{conn: conn}
	if err := x.checkFormat(); err != nil {
		x.close(false)
		return nil, err
	}
	if cursor {
		if err := x.initCursor(); err != nil {
			x.close(false)
			return nil, fmt.Errorf("pointer drawing needs XFixes: %w", err)
		}
	}
	x.watchDamage()
	if useSHM {
		if err := x.attach(); err != nil {
			return x, fmt.Errorf("%w: %w", errNoSHM, err)
		}
	}
	return x, nil
}

// watchDamage asks for one DamageNotify event whenever the screen's damage
// goes from empty to not empty (the DAMAGE extension, level NonEmpty), so a
// capture can tell at the cost of one round trip that nothing was drawn
// since the last one. Without the extension every capture reads the screen.
func (x *xconn) watchDamage() {
	if initExtension(x.conn, "DAMAGE") != nil {
		return
	}
	if _, err := damage.QueryVersion(x.conn, 1, 1).Reply(); err != nil {
		return
	}
	id, err := damage.NewDamageId(x.conn)
	if err != nil {
		return
	}
	if damage.CreateChecked(x.conn, id, xproto.Drawable(x.root), damage.ReportLevelNonEmpty).Check() != nil {
		return
	}
	x.damage = id
}

// extMu serialises initExtension's registrations.
var extMu sync.Mutex

// initExtension does what the Init of xgb's extension packages (shm.Init,
// damage.Init, xfixes.Init) does, but writes xgb's process-wide tables of
// event and error decoders only where the extension's numbers are not there
// yet: those tables are read without a lock by every connection's reader
// goroutine, and the packages' Init rewrites them on every connection (a
// data race with the readers of other connections). So they are written
// once per server's numbering: on agentd's first connection, before it has
// asked for any event. A number taken by another decoder still delivers an
// event or an error, which the callers take as damage or failure.
func initExtension(c *xgb.Conn, name string) error {
	reply, err := xproto.QueryExtension(c, uint16(len(name)), name).Reply()
	if err != nil {
		return err
	}
	if !reply.Present {
		return fmt.Errorf("no %s extension", name)
	}
	c.ExtLock.Lock()
	c.Extensions[name] = reply.MajorOpcode
	c.ExtLock.Unlock()
	extMu.Lock()
	defer extMu.Unlock()
	for n, f := range xgb.NewExtEventFuncs[name] {
		if ev := int(reply.FirstEvent) + n; xgb.NewEventFuncs[ev] == nil {
			xgb.NewEventFuncs[ev] = f
		}
	}
	for n, f := range xgb.NewExtErrorFuncs[name] {
		if e := int(reply.FirstError) + n; xgb.NewErrorFuncs[e] == nil {
			xgb.NewErrorFuncs[e] = f
		}
	}
	return nil
}

// resetDamage forgets the events received so far and empties the damage
// region; sent just before a capture request, so that anything drawn after
// the server took the image notifies us again.
func (x *xconn) resetDamage() {
	if x.damage == 0 {
		return
	}
	x.drained()
	damage.Subtract(x.conn, x.damage, 0, 0)
}

// drained empties the event queue and reports whether it held anything: a
// DamageNotify, or an error (of a request without a reply), which is taken
// as damage too.
func (x *xconn) drained() (any bool) {
	for {
		ev, err := x.conn.PollForEvent()
		if ev == nil && err == nil {
			return any
		}
		any = true
	}
}

// errNoSHM marks a connection that works but cannot share memory with the
// server (another host, another IPC namespace, no MIT-SHM extension).
var errNoSHM = errors.New("MIT-SHM unavailable")

func (x *xconn) checkFormat() error {
	setup := xproto.Setup(x.conn)
	scr := setup.DefaultScreen(x.conn)
	x.root, x.w, x.h = scr.Root, int(scr.WidthInPixels), int(scr.HeightInPixels)
	if setup.ImageByteOrder != xproto.ImageOrderLSBFirst {
		return errors.New("unsupported X image byte order (MSB first)")
	}
	bpp := 0
	for _, f := range setup.PixmapFormats {
		if f.Depth == scr.RootDepth {
			bpp = int(f.BitsPerPixel)
		}
	}
	if bpp != 32 {
		return fmt.Errorf("unsupported root depth %d (%d bits per pixel; want 32)", scr.RootDepth, bpp)
	}
	for _, d := range scr.AllowedDepths {
		for _, v := range d.Visuals {
			if v.VisualId != scr.RootVisual {
				continue
			}
			if v.Class != xproto.VisualClassTrueColor || v.RedMask != 0xff0000 || v.GreenMask != 0xff00 || v.BlueMask != 0xff {
				return fmt.Errorf("unsupported root visual (class %d, masks %#x %#x %#x)",
					v.Class, v.RedMask, v.GreenMask, v.BlueMask)
			}
			return nil
		}
	}
	return errors.New("root visual not found in the X setup")
}

// serverAttach asks the X server to attach segment id and waits for its
// verdict; a variable so a test can make the server refuse.
var serverAttach = func(c *xgb.Conn, seg shm.Seg, id int) error {
	return shm.AttachChecked(c, seg, uint32(id), false).Check()
}

// attach creates and attaches a segment for the current screen size. The
// segment is marked for removal as soon as both sides hold it, so the
// kernel frees it when the last of them detaches, even after a crash. Mode
// 0600: only our user can attach it (and root); a server running as another
// user is refused, and we fall back to GetImage.
func (x *xconn) attach() error {
	if err := initExtension(x.conn, "MIT-SHM"); err != nil {
		return err
	}
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, x.w*x.h*4, unix.IPC_CREAT|0o600)
	if err != nil {
		return fmt.Errorf("shmget: %w", err)
	}
	data, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		return fmt.Errorf("shmat: %w", err)
	}
	fail := func(err error) error {
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		_ = unix.SysvShmDetach(data)
		return err
	}
	seg, err := shm.NewSegId(x.conn)
	if err != nil {
		return fail(err)
	}
	if err := serverAttach(x.conn, seg, id); err != nil {
		return fail(fmt.Errorf("X server cannot attach the segment: %w", err))
	}
	if err := x.verify(seg, data); err != nil {
		shm.Detach(x.conn, seg)
		return fail(err)
	}
	if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil {
		shm.Detach(x.conn, seg)
		return fail(fmt.Errorf("mark segment for removal: %w", err))
	}
	x.seg = &segment{id: id, seg: seg, data: data}
	return nil
}

// verify checks that the server attached our segment and not another one
// with the same id: in another IPC namespace (a server outside our
// container) the id may name some other program's segment, and the attach
// succeeds. The server copies two pixels we wrote from the segment into a
// pixmap (ShmPutImage), and a plain GetImage must return them.
func (x *xconn) verify(seg shm.Seg, data []byte) error {
	probe := [8]byte{0x13, 0x57, 0x9b, 0, 0xdf, 0x24, 0x68, 0}
	copy(data, probe[:])
	scr := xproto.Setup(x.conn).DefaultScreen(x.conn)
	pix, err := xproto.NewPixmapId(x.conn)
	if err != nil {
		return err
	}
	gc, err := xproto.NewGcontextId(x.conn)
	if err != nil {
		return err
	}
	xproto.CreatePixmap(x.conn, scr.RootDepth, pix, xproto.Drawable(x.root), 2, 1)
	defer xproto.FreePixmap(x.conn, pix)
	xproto.CreateGC(x.conn, gc, xproto.Drawable(pix), 0, nil)
	defer xproto.FreeGC(x.conn, gc)
	shm.PutImage(x.conn, xproto.Drawable(pix), gc, 2, 1, 0, 0, 2, 1, 0, 0,
		scr.RootDepth, xproto.ImageFormatZPixmap, 0, seg, 0)
	img, err := xproto.GetImage(x.conn, xproto.ImageFormatZPixmap, xproto.Drawable(pix), 0, 0, 2, 1, 0xffffffff).Reply()
	if err != nil {
		return fmt.Errorf("verify the segment: %w", err)
	}
	if len(img.Data) < 8 || [3]byte(img.Data[0:3]) != [3]byte(probe[0:3]) || [3]byte(img.Data[4:7]) != [3]byte(probe[4:7]) {
		return errors.New("the X server attached a different segment (another IPC namespace?)")
	}
	return nil
}

// detach releases the segment on both sides. The server's side goes with
// the connection anyway; the explicit request matters for a live one.
func (x *xconn) detach() {
	if x.seg == nil {
		return
	}
	shm.Detach(x.conn, x.seg.seg)
	_ = unix.SysvShmDetach(x.seg.data)
	x.seg = nil
}

// closeWait bounds how long close waits for xgb to wind down; a server that
// is stopped (SIGSTOP) never answers the final round trip.
const closeWait = time.Second

// close ends the connection. With wait it returns only when xgb's goroutines
// have finished (so the server has processed the detach), or after closeWait.
func (x *xconn) close(wait bool) {
	x.detach()
	x.conn.Close()
	if !wait {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			// Both nil: the event channel is closed, xgb has shut down.
			if ev, err := x.conn.WaitForEvent(); ev == nil && err == nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
	}
}

// pending is a capture in flight: the root's geometry and its pixels at the
// size we believe it has, requested back to back so the size check costs no
// extra round trip.
type pending struct {
	geo xproto.GetGeometryCookie
	img *xgb.Cookie
	cur *xfixes.GetCursorImageCookie // nil unless drawing the pointer
}

func (x *xconn) request() pending {
	p := pending{geo: xproto.GetGeometry(x.conn, xproto.Drawable(x.root))}
	if x.seg != nil {
		p.img = shm.GetImage(x.conn, xproto.Drawable(x.root), 0, 0, uint16(x.w), uint16(x.h),
			0xffffffff, xproto.ImageFormatZPixmap, x.seg.seg, 0).Cookie
	} else {
		p.img = xproto.GetImage(x.conn, xproto.ImageFormatZPixmap, xproto.Drawable(x.root),
			0, 0, uint16(x.w), uint16(x.h), 0xffffffff).Cookie
	}
	if x.cursor {
		cur := xfixes.GetCursorImage(x.conn)
		p.cur = &cur
	}
	return p
}

// reply is what a capture brings back.
type reply struct {
	w, h   int    // the root's current size (0 if unknown)
	raw    []byte // GetImage: the whole raw reply; SHM: a small reply, pixels are in the segment
	cursor *xfixes.GetCursorImageReply
	err    error
}

// wait blocks until both replies are in. It touches nothing but the
// cookies, so it can run in its own goroutine and be abandoned.
func (p pending) wait() reply {
	var r reply
	g, gerr := p.geo.Reply()
	if g != nil {
		r.w, r.h = int(g.Width), int(g.Height)
	}
	// The raw reply: parsing it would copy the pixels once more.
	raw, ierr := p.img.Reply()
	var cerr error
	if p.cur != nil {
		r.cursor, cerr = p.cur.Reply()
	}
	r.raw, r.err = raw, cmp.Or(gerr, ierr, cerr) // after a loss all fail alike
	return r
}

// sync is a round trip: its reply comes after every event the server sent
// before it, so once it is in, the event queue holds all the damage up to
// now. It asks for the root's size, which a resize (RandR) changes.
func (x *xconn) sync() func() reply {
	c := xproto.GetGeometry(x.conn, xproto.Drawable(x.root))
	return func() reply {
		g, err := c.Reply()
		if g == nil {
			return reply{err: err}
		}
		return reply{w: int(g.Width), h: int(g.Height), err: err}
	}
}

// isXError tells a request the server refused from a lost connection.
func isXError(err error) bool {
	var xe xgb.Error
	return errors.As(err, &xe)
}
