//go:build linux && cgo

package xtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/agentd/input"
	"github.com/agentd-dev/agentd/agentd/input/inputtest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

// TestConformance: the X device passes the suite the recording fake passes
// (input's TestFakeConformance), judged by the X server itself: what it
// holds down, where its pointer is, and what an X client received.
func TestConformance(t *testing.T) {
	x := xvfbtest.Start(t, inputtest.Width, inputtest.Height)
	rec := xrecorder.Start(t, x.Display)
	conn, err := xgb.NewConnDisplay(x.Display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	names := map[uint32]string{}
	for _, n := range inputtest.KeyNames {
		sym, err := keysymOf(n)
		if err != nil {
			t.Fatal(err)
		}
		names[uint32(sym)] = n
	}
	inputtest.Run(t, func(t *testing.T) (input.Device, inputtest.Display) {
		in, err := Open(x.Display)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = in.Close() })
		rec.Sync(t)
		rec.Clear()
		return in, xDisplay{rec: rec, conn: conn, names: names}
	})
}

// xDisplay asks the X server what it shows.
type xDisplay struct {
	rec   *xrecorder.Recorder
	conn  *xgb.Conn
	names map[uint32]string // keysym → name, for the suite's keys
}

func (d xDisplay) Held(t testing.TB) []string {
	codes, mask := d.rec.Down(t)
	var held []string
	for _, c := range codes {
		sym := d.rec.Lookup(c, 0)
		name, ok := d.names[sym]
		if !ok {
			name = fmt.Sprintf("0x%x (keycode %d)", sym, c)
		}
		held = append(held, "key:"+name)
	}
	for bit, b := range map[uint16]string{xrecorder.Button1Mask: "left", xrecorder.Button2Mask: "middle", xrecorder.Button3Mask: "right"} {
		if mask&bit != 0 {
			held = append(held, "button:"+b)
		}
	}
	slices.Sort(held)
	return held
}

func (d xDisplay) Pointer(t testing.TB) (int, int) {
	root := xproto.Setup(d.conn).DefaultScreen(d.conn).Root
	p, err := xproto.QueryPointer(d.conn, root).Reply()
	if err != nil {
		t.Fatalf("query pointer: %v", err)
	}
	return int(p.RootX), int(p.RootY)
}

func (d xDisplay) Typed(t testing.TB, want string) {
	t.Helper()
	d.rec.Sync(t)
	d.rec.WaitTyped(t, want, 5*time.Second)
}
