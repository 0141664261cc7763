package local

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// xDir is where every X server keeps its lock files and sockets, whatever
// $TMPDIR says: it is the X11 convention, not a temporary directory.
const xDir = "/tmp"

// writeXauthority writes an Xauthority file holding one MIT-MAGIC-COOKIE-1
// for any host ("FamilyWild") and display number (empty: any display).
func writeXauthority(path, number string, cookie []byte) error {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint16(0xffff)) // FamilyWild
	for _, field := range [][]byte{nil, []byte(number), []byte("MIT-MAGIC-COOKIE-1"), cookie} {
		_ = binary.Write(&b, binary.BigEndian, uint16(len(field)))
		b.Write(field)
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	if err := writeNewFile(tmp, b.String()); err != nil {
		return fmt.Errorf("xauthority: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("xauthority: %w", err)
	}
	return nil
}

// readCookie returns the cookie of an Xauthority file written by
// writeXauthority.
func readCookie(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := bytes.NewReader(data)
	var family uint16
	if err := binary.Read(r, binary.BigEndian, &family); err != nil {
		return nil, fmt.Errorf("xauthority %s: %w", path, err)
	}
	var field []byte
	for range 4 { // address, number, name, data: the last one read is the cookie
		var n uint16
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return nil, fmt.Errorf("xauthority %s: %w", path, err)
		}
		field = make([]byte, n)
		if _, err := io.ReadFull(r, field); err != nil {
			return nil, fmt.Errorf("xauthority %s: %w", path, err)
		}
	}
	return field, nil
}

// xconn is a connection to a guest's display, for readiness checks.
type xconn struct {
	c    *xgb.Conn
	root xproto.Window
}

// dialX connects to display n with the cookie in xauthority. The unix
// socket and the cookie are passed explicitly so that no process-wide
// environment ($DISPLAY, $XAUTHORITY) is involved: two guests, two displays.
func dialX(n int, xauthority string) (*xconn, error) {
	cookie, err := readCookie(xauthority)
	if err != nil {
		return nil, err
	}
	nc, err := net.DialTimeout("unix", filepath.Join(xDir, ".X11-unix", "X"+strconv.Itoa(n)), 5*time.Second)
	if err != nil {
		return nil, err
	}
	c, err := xgb.NewConnNetWithCookieHex(nc, hex.EncodeToString(cookie))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &xconn{c: c, root: xproto.Setup(c).DefaultScreen(c).Root}, nil
}

func (x *xconn) close() { x.c.Close() }

func (x *xconn) atom(name string) (xproto.Atom, error) {
	r, err := xproto.InternAtom(x.c, false, uint16(len(name)), name).Reply()
	if err != nil {
		return 0, fmt.Errorf("intern atom %s: %w", name, err)
	}
	return r.Atom, nil
}

// property returns the raw value of a window property (nil if unset).
func (x *xconn) property(w xproto.Window, name string, typ xproto.Atom) ([]byte, error) {
	a, err := x.atom(name)
	if err != nil {
		return nil, err
	}
	r, err := xproto.GetProperty(x.c, false, w, a, typ, 0, 1<<16).Reply()
	if err != nil {
		return nil, fmt.Errorf("get property %s: %w", name, err)
	}
	return r.Value, nil
}

// wmRunning reports whether an EWMH window manager manages the screen: it
// sets _NET_SUPPORTING_WM_CHECK on the root window once it has started.
func wmRunning(x *xconn) (bool, error) {
	v, err := x.property(x.root, "_NET_SUPPORTING_WM_CHECK", xproto.AtomWindow)
	return len(v) >= 4, err
}

// window finds the first viewable managed window whose WM_CLASS class is
// class and returns its rectangle in screen pixels.
func (x *xconn) window(class string) (image.Rectangle, bool, error) {
	list, err := x.property(x.root, "_NET_CLIENT_LIST", xproto.AtomWindow)
	if err != nil {
		return image.Rectangle{}, false, err
	}
	for i := 0; i+4 <= len(list); i += 4 {
		w := xproto.Window(xgb.Get32(list[i:]))
		// Errors below mean the window went away meanwhile: skip it.
		v, err := x.property(w, "WM_CLASS", xproto.AtomString)
		if err != nil {
			continue
		}
		// WM_CLASS is "instance\x00class\x00".
		parts := bytes.Split(bytes.TrimRight(v, "\x00"), []byte{0})
		if len(parts) != 2 || string(parts[1]) != class {
			continue
		}
		attr, err := xproto.GetWindowAttributes(x.c, w).Reply()
		if err != nil || attr.MapState != xproto.MapStateViewable {
			continue
		}
		geo, err := xproto.GetGeometry(x.c, xproto.Drawable(w)).Reply()
		if err != nil {
			continue
		}
		pos, err := xproto.TranslateCoordinates(x.c, w, x.root, 0, 0).Reply()
		if err != nil {
			continue
		}
		r := image.Rect(int(pos.DstX), int(pos.DstY), int(pos.DstX)+int(geo.Width), int(pos.DstY)+int(geo.Height))
		return r, true, nil
	}
	return image.Rectangle{}, false, nil
}
