// Package xwait is `agentd x-wait`: it waits until an EWMH window manager
// manages a display, or until a viewable top-level window of a WM_CLASS
// class exists, and prints that window's rectangle.
//
// The local backend runs it while it starts a desktop. It is a guest
// program's job because it is an X client: the host side links no X11
// library (docs/design.md, "The tree"), and the local backend already needs
// agentd's binary, which holds this one.
package xwait

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"image"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/internal/xauth"
)

// poll is the interval between two looks at the display.
const poll = 50 * time.Millisecond

// Main runs `agentd x-wait` with args (after the subcommand's name) until
// the condition holds, --timeout passes or ctx ends. With --window-class it
// writes the window's rectangle to out as "X Y WIDTH HEIGHT".
func Main(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("agentd x-wait", flag.ContinueOnError)
	display := fs.String("display", "", "the local display, e.g. :3 (required)")
	xauthority := fs.String("xauthority", "", "the Xauthority file with the display's cookie (required)")
	class := fs.String("window-class", "", "wait for a viewable window of this WM_CLASS class (default: for a window manager)")
	timeout := fs.Duration("timeout", 0, "how long to keep looking (0: look once)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *display == "" || *xauthority == "" || fs.NArg() != 0 {
		fs.Usage()
		return errors.New("x-wait: want --display and --xauthority, and no arguments")
	}
	x, err := dial(*display, *xauthority)
	if err != nil {
		return fmt.Errorf("x-wait: connect to display %s: %w", *display, err)
	}
	defer x.c.Close()
	what := "window manager"
	cond := x.wmRunning
	var win image.Rectangle
	if *class != "" {
		what = "viewable window of class " + *class
		cond = func() (found bool, err error) {
			win, found, err = x.window(*class)
			return found, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok {
			if *class != "" {
				_, err := fmt.Fprintf(out, "%d %d %d %d\n", win.Min.X, win.Min.Y, win.Dx(), win.Dy())
				return err
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("x-wait: no %s on %s within %v (last error: %v)", what, *display, *timeout, err)
			}
			return fmt.Errorf("x-wait: no %s on %s within %v", what, *display, *timeout)
		case <-tick.C:
		}
	}
}

// conn is a connection to a display, for looking at its windows.
type conn struct {
	c    *xgb.Conn
	root xproto.Window
}

// dial connects to a local display (":N") over its unix socket with the
// cookie in xauthority, passed explicitly so that no process-wide
// environment ($DISPLAY, $XAUTHORITY) is involved.
func dial(display, xauthority string) (*conn, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(display, ":"))
	if err != nil || !strings.HasPrefix(display, ":") {
		return nil, fmt.Errorf("display %q is not a local display number", display)
	}
	cookie, err := xauth.Cookie(xauthority)
	if err != nil {
		return nil, err
	}
	// /tmp, whatever $TMPDIR says: the X11 convention, not a temporary directory.
	nc, err := net.DialTimeout("unix", filepath.Join("/tmp/.X11-unix", "X"+strconv.Itoa(n)), 5*time.Second)
	if err != nil {
		return nil, err
	}
	c, err := xgb.NewConnNetWithCookieHex(nc, hex.EncodeToString(cookie))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &conn{c: c, root: xproto.Setup(c).DefaultScreen(c).Root}, nil
}

func (x *conn) atom(name string) (xproto.Atom, error) {
	r, err := xproto.InternAtom(x.c, false, uint16(len(name)), name).Reply()
	if err != nil {
		return 0, fmt.Errorf("intern atom %s: %w", name, err)
	}
	return r.Atom, nil
}

// property returns the raw value of a window property (nil if unset).
func (x *conn) property(w xproto.Window, name string, typ xproto.Atom) ([]byte, error) {
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
func (x *conn) wmRunning() (bool, error) {
	v, err := x.property(x.root, "_NET_SUPPORTING_WM_CHECK", xproto.AtomWindow)
	return len(v) >= 4, err
}

// window finds the first viewable managed window whose WM_CLASS class is
// class and returns its rectangle in screen pixels.
func (x *conn) window(class string) (image.Rectangle, bool, error) {
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
