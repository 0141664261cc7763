//go:build linux && cgo

package agentd

import (
	"image/color"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
)

func watch(t *testing.T, d *desktop, opts guest.WatchOptions) *guest.Watcher {
	t.Helper()
	w, err := guest.Watch(ctx5(t), d.addr, testToken, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// A watcher and the controller are served side by side: the watcher gets
// the screen when it starts and again each time it changes, fitted into the
// size it asked for, and a still screen sends nothing.
func TestWatcherSeesChangesBesideTheController(t *testing.T) {
	d := newDesktopServer(t, 1440, 900, t.Logf)
	w := watch(t, d, guest.WatchOptions{FPS: 30, Width: 720, Height: 720})
	c, err := guest.Dial(ctx5(t), d.addr, testToken) // the controller slot is free
	if err != nil {
		t.Fatalf("a controller beside a watcher: %v", err)
	}
	defer c.Close()
	w2 := watch(t, d, guest.WatchOptions{}) // and a watcher beside a controller

	first, err := w.Next(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	if first.Seq != 1 || first.Width != 720 || first.Height != 450 {
		t.Fatalf("first frame %+v, want seq 1 at 720×450", first.WatchFrame)
	}
	if f, err := w2.Next(ctx5(t)); err != nil || f.Width != 1440 || f.Height != 900 {
		t.Fatalf("default watcher frame %+v, %v; want the native 1440×900", f.WatchFrame, err)
	}
	if got := decodePNG(t, first.PNG).Bounds(); got.Dx() != 720 || got.Dy() != 450 {
		t.Fatalf("PNG %v", got)
	}

	// Still: no frame comes, though the loop looks 30 times a second; the
	// next one is the changed screen.
	type next struct {
		f   guest.Frame
		err error
	}
	got := make(chan next, 1)
	go func() { f, err := w.Next(ctx5(t)); got <- next{f, err} }()
	select {
	case n := <-got:
		t.Fatalf("a frame of a still screen: %+v, %v", n.f.WatchFrame, n.err)
	case <-time.After(400 * time.Millisecond):
	}
	d.rec.Fill(t, 0, 0, 200, 200, color.RGBA{G: 255, A: 255})
	n := <-got
	changed, err := n.f, n.err
	if err != nil {
		t.Fatal(err)
	}
	if r, g, _, _ := decodePNG(t, changed.PNG).At(20, 20).RGBA(); r>>8 > 10 || g>>8 < 245 {
		t.Fatalf("changed frame at (20,20) is r=%d g=%d, want the green fill", r>>8, g>>8)
	}
	// The controller still works.
	if _, err := c.Screenshot(ctx5(t)); err != nil {
		t.Fatal(err)
	}
}

// A watcher that sends anything — here a well-formed click request — is
// closed with a policy violation, and nothing reaches the desktop.
func TestWatcherInputIsRefused(t *testing.T) {
	d := newDesktopServer(t, 800, 600, t.Logf)
	ctx := ctx5(t)
	conn, _, err := websocket.Dial(ctx, "ws://"+d.addr+wire.WatchPath, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + testToken}},
		Subprotocols: []string{wire.WatchSubprotocol},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(wire.MaxReplyBytes)
	if _, _, err := conn.Read(ctx); err != nil { // hello
		t.Fatal(err)
	}
	click := `{"id":1,"op":"action","action":{"type":"click","x":100,"y":100,"button":"left"}}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(click)); err != nil {
		t.Fatal(err)
	}
	for {
		_, _, err := conn.Read(ctx)
		if err == nil {
			continue // frames sent before the refusal
		}
		if got := websocket.CloseStatus(err); got != websocket.StatusPolicyViolation {
			t.Fatalf("close %v (%v), want a policy violation", got, err)
		}
		break
	}
	d.rec.Sync(t)
	for _, e := range d.rec.Events() {
		if e.Kind != xrecorder.MappingChange {
			t.Fatalf("the desktop got %v from a watcher", e)
		}
	}
	// A controller then clicks normally: the recorder sees real input.
	c := dial(t, d.addr)
	if _, err := c.Click(ctx, 10, 10, actions.Left); err != nil {
		t.Fatal(err)
	}
}

// Watchers need the token; there are at most wire.MaxWatchers; bad
// options are refused before the upgrade.
func TestWatchRefusals(t *testing.T) {
	d := newDesktopServer(t, 640, 480, t.Logf)
	if _, err := guest.Watch(ctx5(t), d.addr, "wrong-token-wrong-token", guest.WatchOptions{}); err == nil {
		t.Fatal("a wrong token was let in")
	}
	for range wire.MaxWatchers {
		watch(t, d, guest.WatchOptions{})
	}
	if _, err := guest.Watch(ctx5(t), d.addr, testToken, guest.WatchOptions{}); err == nil {
		t.Fatal("one watcher more than the limit was let in")
	}
	resp, err := http.Get("http://" + d.addr + wire.WatchPath + "?fps=1000")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", "http://"+d.addr+wire.WatchPath+"?fps=1000", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("fps=1000: HTTP %d, want 400", resp.StatusCode)
	}
}
