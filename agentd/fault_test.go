//go:build linux && cgo

package agentd

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
)

func (d *desktop) health(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func (d *desktop) dialEventually(t *testing.T) *guest.Client { return dialEventually(t, d.addr) }

// TestE2EXServerRestartedUnderAgentd: the X server goes away under a
// running agentd with a controller connected. Health turns red and actions
// and screenshots fail with errors that say the display is gone; once a new
// X server runs on the display, health turns green and the same session
// clicks, types and takes screenshots on it: no agentd restart.
func TestE2EXServerRestartedUnderAgentd(t *testing.T) {
	d := newRestartableDesktop(t)
	if code := d.health(t); code != http.StatusOK {
		t.Fatalf("health before: %d", code)
	}
	if _, err := d.client.Type(ctx5(t), "ok"); err != nil {
		t.Fatal(err)
	}

	if err := d.x.Down(); err != nil {
		t.Fatal(err)
	}
	if code := d.health(t); code != http.StatusServiceUnavailable {
		t.Fatalf("health with the X server gone: %d, want 503", code)
	}
	_, err := d.client.Click(ctx5(t), 10, 10, actions.Left)
	var ge *guest.Error
	if !errors.As(err, &ge) || ge.Code != wire.CodeFailed || !strings.Contains(ge.Message, "X display lost") {
		t.Fatalf("click with the X server gone: %v", err)
	}
	if _, err := d.client.Screenshot(ctx5(t)); err == nil || !strings.Contains(err.Error(), "screenshot failed") {
		t.Fatalf("screenshot with the X server gone: %v", err)
	}

	if err := d.x.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for d.health(t) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("health stayed red after the X server came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec := xrecorder.Start(t, d.x.Display)
	if _, err := d.client.Click(ctx5(t), 700, 400, actions.Left, "ctrl"); err != nil {
		t.Fatalf("click on the new X server: %v", err)
	}
	ev := rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease }, 5*time.Second)
	if ev.X != 700 || ev.Y != 400 || ev.State&xrecorder.ControlMask == 0 {
		t.Fatalf("click arrived as %v", ev)
	}
	if _, err := d.client.Type(ctx5(t), "Zoë ✓"); err != nil {
		t.Fatal(err)
	}
	rec.WaitTyped(t, "Zoë ✓", 5*time.Second)
	shot, err := d.client.Screenshot(ctx5(t))
	if err != nil {
		t.Fatalf("screenshot on the new X server: %v", err)
	}
	if b := decodePNG(t, shot.PNG).Bounds(); b.Dx() != 1440 || b.Dy() != 900 {
		t.Fatalf("screenshot %v", b)
	}
	if keys, mask := rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
		t.Fatalf("left pressed: keys %v mask %#x", keys, mask)
	}
}

// rawController connects without the guest client, so the test can drop
// the TCP connection at any moment.
func (d *desktop) rawController(t *testing.T) *websocket.Conn { return rawConnTo(t, d.addr) }

// TestE2EDroppedConnectionMidType: the controller's connection drops while
// a long text is being typed. Typing stops, nothing stays pressed, and the
// next controller is admitted and served.
func TestE2EDroppedConnectionMidType(t *testing.T) {
	d := newDesktopServer(t, 1440, 900, t.Logf)
	conn := d.rawController(t)
	text := strings.Repeat("Typing On And On, ", 400)
	req := `{"id":1,"op":"action","action":{"type":"type","text":"` + text + `"}}`
	if err := conn.Write(ctx5(t), websocket.MessageText, []byte(req)); err != nil {
		t.Fatal(err)
	}
	d.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(xrecorder.Typed(evs)) >= 20 }, 10*time.Second)
	conn.CloseNow()

	c := d.dialEventually(t)
	d.rec.Sync(t)
	typed := len(d.rec.Typed())
	if typed >= len(text) {
		t.Fatalf("all %d characters were typed: the drop did not stop typing", typed)
	}
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
		t.Fatalf("left pressed after the drop: keys %v mask %#x", keys, mask)
	}
	d.rec.Clear()
	if _, err := c.Type(ctx5(t), "next"); err != nil {
		t.Fatal(err)
	}
	d.rec.WaitTyped(t, "next", 5*time.Second)
}

// TestE2EDroppedConnectionMidDrag: the connection drops in the middle of a
// long drag holding shift and ctrl. The button and both modifiers are
// released, and the next controller is served.
func TestE2EDroppedConnectionMidDrag(t *testing.T) {
	d := newDesktopServer(t, 1440, 900, t.Logf)
	conn := d.rawController(t)
	req := `{"id":1,"op":"action","action":{"type":"drag","keys":["shift","ctrl"],"path":` + agentdtest.LongDragPath(1400, 890) + `}}`
	if err := conn.Write(ctx5(t), websocket.MessageText, []byte(req)); err != nil {
		t.Fatal(err)
	}
	press := d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress && e.Button == 1 }, 10*time.Second)
	if press.State&(xrecorder.ShiftMask|xrecorder.ControlMask) != xrecorder.ShiftMask|xrecorder.ControlMask {
		t.Fatalf("drag pressed without its modifiers: %v", press)
	}
	conn.CloseNow()

	c := d.dialEventually(t)
	d.rec.Sync(t)
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask&0xff != 0 || mask&xrecorder.Button1Mask != 0 {
		t.Fatalf("left pressed after the drop: keys %v mask %#x", keys, mask)
	}
	var release *xrecorder.Event
	for _, e := range d.rec.Events() {
		if e.Kind == xrecorder.ButtonRelease && e.Button == 1 {
			release = &e
		}
	}
	if release == nil {
		t.Fatal("the drag's button was never released")
	}
	if release.X == 1400 && release.Y == 10 {
		t.Fatal("the drag ran to its end: the drop did not interrupt it")
	}
	if _, err := c.Move(ctx5(t), 5, 5); err != nil {
		t.Fatal(err)
	}
}
