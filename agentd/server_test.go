package agentd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/scaling"
)

const testToken = "test-token-0123456789abcdef"

// fakeScreen is a 200×100 screen: left half red, right half blue.
type fakeScreen struct {
	img  *image.RGBA
	fail bool
}

func newFakeScreen() *fakeScreen {
	img := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for y := 0; y < 100; y++ {
		for x := 0; x < 200; x++ {
			c := color.RGBA{255, 0, 0, 255}
			if x >= 100 {
				c = color.RGBA{0, 0, 255, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return &fakeScreen{img: img}
}

func (f *fakeScreen) Size() (int, int) { return 200, 100 }
func (f *fakeScreen) Capture(ctx context.Context) (*image.RGBA, error) {
	if f.fail {
		return nil, errors.New("display gone")
	}
	return f.img, ctx.Err()
}
func (f *fakeScreen) FrameHash(ctx context.Context) (uint64, error) {
	if f.fail {
		return 0, errors.New("display gone")
	}
	return 1, ctx.Err()
}

// nearestImager renders with nearest-neighbour sampling through the
// transform, so tests can check which screen pixel an image pixel shows.
type nearestImager struct{}

func (nearestImager) Render(w io.Writer, src *image.RGBA, t scaling.Transform) error {
	dst := image.NewRGBA(image.Rect(0, 0, t.Image.W, t.Image.H))
	for y := 0; y < t.Image.H; y++ {
		for x := 0; x < t.Image.W; x++ {
			sx, sy, err := t.ToScreen(x, y)
			if err != nil {
				return err
			}
			dst.Set(x, y, src.At(sx, sy))
		}
	}
	return png.Encode(w, dst)
}

// fakeExec records the actions it performs (in screen coordinates). A type
// action blocks until its context ends; "fail" as typed text fails.
type fakeExec struct {
	mu       sync.Mutex
	done     []actions.Action
	released int
	started  chan actions.Action
}

func (f *fakeExec) Do(ctx context.Context, a actions.Action) (executor.Result, error) {
	if f.started != nil {
		f.started <- a
	}
	if a.Type == actions.TypeText && a.Text == "block" {
		<-ctx.Done()
		return executor.Result{}, ctx.Err()
	}
	if a.Type == actions.TypeText && a.Text == "fail" {
		return executor.Result{}, &executor.Error{Action: a.Type, Err: errors.New("keyboard on fire")}
	}
	f.mu.Lock()
	f.done = append(f.done, a)
	f.mu.Unlock()
	return executor.Result{Duration: time.Millisecond}, nil
}

func (f *fakeExec) ReleaseAll() error {
	f.mu.Lock()
	f.released++
	f.mu.Unlock()
	return nil
}

func (f *fakeExec) snapshot() ([]actions.Action, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]actions.Action(nil), f.done...), f.released
}

type fixture struct {
	srv    *Server
	http   *httptest.Server
	exec   *fakeExec
	screen *fakeScreen
	addr   string
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{exec: &fakeExec{}, screen: newFakeScreen()}
	cfg := Config{Token: []byte(testToken), Screen: f.screen, Imager: nearestImager{}, Exec: f.exec, Logf: t.Logf}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.http = httptest.NewServer(srv)
	t.Cleanup(f.http.Close)
	// Runs before the HTTP server closes: the session ends (and stops
	// logging) before the test does.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	f.addr = strings.TrimPrefix(f.http.URL, "http://")
	return f
}

// dial connects a controller to the agentd at addr, until the test ends.
func dial(tb testing.TB, addr string) *guest.Client {
	tb.Helper()
	return agentdtest.Dial(tb, addr, testToken)
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAuthRefusedBeforeUpgrade(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no token", http.Header{}, 401},
		{"wrong token", http.Header{"Authorization": {"Bearer test-token-0123456789abcdeX"}}, 401},
		{"shorter token", http.Header{"Authorization": {"Bearer test-token"}}, 401},
		{"longer token", http.Header{"Authorization": {"Bearer " + testToken + "0"}}, 401},
		{"not bearer", http.Header{"Authorization": {"Basic " + testToken}}, 401},
		{"origin", http.Header{"Authorization": {"Bearer " + testToken}, "Origin": {"http://evil.example"}}, 403},
		{"referer", http.Header{"Authorization": {"Bearer " + testToken}, "Referer": {"http://evil.example/"}}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, resp, err := websocket.Dial(ctx5(t), "ws://"+f.addr+"/v1", &websocket.DialOptions{
				HTTPHeader: c.header, Subprotocols: []string{wire.Subprotocol}})
			if err == nil {
				t.Fatal("dial succeeded")
			}
			if resp == nil || resp.StatusCode != c.want {
				t.Fatalf("status = %v, want %d", resp, c.want)
			}
			body, _ := io.ReadAll(resp.Body)
			if strings.Contains(string(body), testToken) {
				t.Fatal("refusal reveals the token")
			}
		})
	}
	// The daemon still serves the rightful controller.
	c := dial(t, f.addr)
	if h := c.Hello(); h.Screen.W != 200 || h.Screen.H != 100 || h.Version != wire.Version {
		t.Fatalf("hello = %+v", h)
	}
}

func TestGuestClientErrorsNameRefusal(t *testing.T) {
	f := newFixture(t, nil)
	_, err := guest.Dial(ctx5(t), f.addr, "wrong-token-0123456789")
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "token") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "wrong-token-0123456789") {
		t.Fatalf("the error shows the token it was given: %v", err)
	}
}

func TestBatchRunsInOrderWithProgressAndScreenshot(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	batch := []actions.Action{
		{Type: actions.Click, X: 10, Y: 20, Button: actions.Right},
		{Type: actions.TypeText, Text: "héllo"},
		{Type: actions.Keypress, Keys: []string{"ctrl", "s"}},
	}
	var progress []wire.ActionResult
	res, err := c.Batch(ctx5(t), batch, func(r wire.ActionResult) { progress = append(progress, r) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 3 || len(progress) != 3 {
		t.Fatalf("results %d, progress %d", len(res.Results), len(progress))
	}
	done, _ := f.exec.snapshot()
	if len(done) != 3 || done[0].X != 10 || done[1].Text != "héllo" || done[2].Type != actions.Keypress {
		t.Fatalf("executed %+v", done)
	}
	img, err := png.Decode(bytes.NewReader(res.Screenshot.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 200 || res.Screenshot.Transform.Image.W != 200 {
		t.Fatalf("screenshot %v transform %+v", img.Bounds(), res.Screenshot.Transform)
	}
}

func TestFailedActionStopsBatch(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	_, err := c.Batch(ctx5(t), []actions.Action{
		{Type: actions.Move, X: 1, Y: 1},
		{Type: actions.TypeText, Text: "fail"},
		{Type: actions.Move, X: 2, Y: 2},
	}, nil)
	var ge *guest.Error
	if !errors.As(err, &ge) || ge.Code != wire.CodeFailed || ge.FailedIndex != 1 || len(ge.Results) != 2 {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(ge.Message, "keyboard on fire") {
		t.Fatalf("message %q", ge.Message)
	}
	done, _ := f.exec.snapshot()
	if len(done) != 1 {
		t.Fatalf("ran %d actions, want 1 (the one before the failure)", len(done))
	}
}

func TestBadInputIsRefusedAndSessionKeepsServing(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	cases := []struct {
		name  string
		batch []actions.Action
		want  string
		index int
	}{
		{"off-screen point", []actions.Action{{Type: actions.Move, X: 1, Y: 1}, {Type: actions.Click, X: 500, Y: 5}}, "outside", 1},
		{"negative point", []actions.Action{{Type: actions.Move, X: -1, Y: 1}}, "outside", 0},
		{"drag path of one point", []actions.Action{{Type: actions.Drag, Path: []actions.Point{{X: 1, Y: 1}}}}, "at least 2", 0},
		{"unknown key", []actions.Action{{Type: actions.Keypress, Keys: []string{"HYPERDRIVE"}}}, `"HYPERDRIVE"`, 0},
	}
	for _, tc := range cases {
		_, err := c.Batch(ctx5(t), tc.batch, nil)
		var ge *guest.Error
		if !errors.As(err, &ge) || ge.Code != wire.CodeBadRequest || ge.FailedIndex != tc.index || !strings.Contains(ge.Message, tc.want) {
			t.Errorf("%s: err = %v (%+v)", tc.name, err, ge)
		}
	}
	if done, _ := f.exec.snapshot(); len(done) != 0 {
		t.Fatalf("a refused batch ran actions: %+v", done)
	}
	if _, err := c.Move(ctx5(t), 5, 5); err != nil {
		t.Fatalf("session stopped serving: %v", err)
	}
}

// rawConn is a websocket to agentd without the guest client, for messages
// the client would never send.
func rawConn(t *testing.T, f *fixture) *websocket.Conn { return rawConnTo(t, f.addr) }

// rawConnTo is a controller's websocket to agentd at addr, hello read,
// without the guest client.
func rawConnTo(t *testing.T, addr string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(ctx5(t), "ws://"+addr+"/v1", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}, Subprotocols: []string{wire.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	if _, _, err := conn.Read(ctx5(t)); err != nil { // hello
		t.Fatal(err)
	}
	return conn
}

func TestMalformedMessages(t *testing.T) {
	f := newFixture(t, nil)
	conn := rawConn(t, f)
	cases := map[string]string{
		`{`:                                  "malformed request",
		`{"id":1,"op":"teleport"}`:           `unknown op "teleport"`,
		`{"id":2,"op":"batch","actions":[]}`: "no actions",
		`{"id":3,"op":"batch","actions":[{"type":"click","x":1,"y":1},{"type":"fly"}]}`: `action 1: unknown action type "fly"`,
		`{"id":4,"op":"action","action":{"type":"click","x":1}}`:                        `missing field "y"`,
		`{"id":5,"op":"action","action":{"type":"click","x":1,"y":1,"text":"a"}}`:       `unexpected field "text"`,
		`{"id":6,"op":"batch","actions":[{"type":"move","x":"1","y":1}]}`:               "wrong type",
		`{"id":7,"op":"screenshot","view":{"width":-5}}`:                                "bad view",
		`{"id":0,"op":"screenshot"}`:                                                    "non-zero id",
		`{"id":8,"op":"screenshot","surprise":1}`:                                       "unknown field",
	}
	for msg, want := range cases {
		if err := conn.Write(ctx5(t), websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, data, err := conn.Read(ctx5(t))
		if err != nil {
			t.Fatal(err)
		}
		var rep wire.Reply
		if err := json.Unmarshal(data, &rep); err != nil || rep.Error == nil {
			t.Fatalf("%s → %s", msg, data)
		}
		if rep.Error.Code != wire.CodeBadRequest || !strings.Contains(rep.Error.Message, want) {
			t.Errorf("%s → %s, want %q", msg, data, want)
		}
	}
	// Binary frames are refused too.
	_ = conn.Write(ctx5(t), websocket.MessageBinary, []byte{1, 2, 3})
	if _, data, _ := conn.Read(ctx5(t)); !bytes.Contains(data, []byte("JSON text frames")) {
		t.Errorf("binary frame → %s", data)
	}
	if done, _ := f.exec.snapshot(); len(done) != 0 {
		t.Fatalf("malformed messages ran actions: %+v", done)
	}
}

func TestManyMalformedMessagesCloseTheSession(t *testing.T) {
	f := newFixture(t, nil)
	conn := rawConn(t, f)
	go func() {
		for i := 0; i < 1000; i++ {
			if conn.Write(context.Background(), websocket.MessageText, []byte("nonsense")) != nil {
				return
			}
		}
	}()
	var err error
	for err == nil {
		_, _, err = conn.Read(ctx5(t))
	}
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation || !strings.Contains(err.Error(), "malformed messages in a row") {
		t.Fatalf("close = %v", err)
	}
	c := f.dialEventually(t) // the next controller is admitted and served
	if _, err := c.Screenshot(ctx5(t)); err != nil {
		t.Fatal(err)
	}
}

func TestOversizedMessageClosesAndDaemonKeepsServing(t *testing.T) {
	f := newFixture(t, nil)
	conn := rawConn(t, f)
	big := `{"id":1,"op":"action","action":{"type":"type","text":"` + strings.Repeat("a", wire.MaxRequestBytes) + `"}}`
	_ = conn.Write(ctx5(t), websocket.MessageText, []byte(big))
	_, _, err := conn.Read(ctx5(t))
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("close = %v", err)
	}
	c := f.dialEventually(t)
	if _, err := c.Screenshot(ctx5(t)); err != nil {
		t.Fatal(err)
	}
}

func TestSecondControllerIsBusy(t *testing.T) {
	f := newFixture(t, nil)
	first := dial(t, f.addr)
	_, err := guest.Dial(ctx5(t), f.addr, testToken)
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("second controller: %v", err)
	}
	first.Close()
	f.dialEventually(t).Close()
}

// dialEventually connects once the previous session has fully ended: the
// controller slot frees only after its inputs were released.
func dialEventually(t *testing.T, addr string) *guest.Client {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := guest.Dial(ctx5(t), addr, testToken)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller slot never freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fixture) dialEventually(t *testing.T) *guest.Client { return dialEventually(t, f.addr) }

func TestCancelStopsRunningActionAndReleases(t *testing.T) {
	f := newFixture(t, nil)
	f.exec.started = make(chan actions.Action, 4)
	c := dial(t, f.addr)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Batch(ctx, []actions.Action{{Type: actions.Move, X: 1, Y: 1}, {Type: actions.TypeText, Text: "block"}, {Type: actions.Move, X: 2, Y: 2}}, nil)
		errc <- err
	}()
	<-f.exec.started
	<-f.exec.started
	cancel()
	err := <-errc
	var ge *guest.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ge) || ge.Code != wire.CodeCancelled || ge.FailedIndex != 1 {
		t.Fatalf("err = %v", err)
	}
	if done, _ := f.exec.snapshot(); len(done) != 1 {
		t.Fatalf("ran %+v", done)
	}
	// The session goes on after a cancel.
	if _, err := c.Move(ctx5(t), 3, 3); err != nil {
		t.Fatal(err)
	}
	c.Close()
	poll.Until(t, 5*time.Second, "ReleaseAll after the session ended", func() bool { _, r := f.exec.snapshot(); return r >= 1 })
}

func TestDroppedConnectionCancelsAndReleases(t *testing.T) {
	f := newFixture(t, nil)
	f.exec.started = make(chan actions.Action, 4)
	conn := rawConn(t, f)
	_ = conn.Write(ctx5(t), websocket.MessageText, []byte(`{"id":1,"op":"action","action":{"type":"type","text":"block"}}`))
	<-f.exec.started
	conn.CloseNow()
	poll.Until(t, 5*time.Second, "ReleaseAll after a dropped connection", func() bool { _, r := f.exec.snapshot(); return r >= 1 })
	f.dialEventually(t)
}

func TestViewScalesAndCropsCoordinates(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	// Crop the right half (blue) and show it at half size.
	c.SetView(wire.View{Crop: &scaling.Rect{X: 100, Y: 0, W: 100, H: 100}, Width: 50, Height: 50})
	shot, err := c.Screenshot(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 50 || img.Bounds().Dy() != 50 {
		t.Fatalf("image %v", img.Bounds())
	}
	if r, _, b, _ := img.At(10, 10).RGBA(); r != 0 || b == 0 {
		t.Fatalf("crop shows the wrong half: %v", img.At(10, 10))
	}
	if _, err := c.Click(ctx5(t), 10, 20, actions.Left); err != nil {
		t.Fatal(err)
	}
	done, _ := f.exec.snapshot()
	if got := done[len(done)-1]; got.X < 120 || got.X > 121 || got.Y < 40 || got.Y > 41 {
		t.Fatalf("image (10,20) → screen (%d,%d), want ≈(120,40)", got.X, got.Y)
	}
	if _, err := c.Click(ctx5(t), 50, 10, actions.Left); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("a point outside the 50×50 image: %v", err)
	}
}

func TestHealthz(t *testing.T) {
	f := newFixture(t, nil)
	get := func() (int, string) {
		resp, err := http.Get(f.http.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != 200 || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("healthy: %d %s", code, body)
	}
	f.screen.fail = true
	if code, body := get(); code != 503 || strings.Contains(body, "display gone") {
		t.Fatalf("unhealthy: %d %s", code, body)
	}
}

func TestBusyClientCall(t *testing.T) {
	f := newFixture(t, nil)
	f.exec.started = make(chan actions.Action, 4)
	c := dial(t, f.addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Type(ctx, "block")
	<-f.exec.started
	if _, err := c.Move(ctx5(t), 1, 1); !errors.Is(err, guest.ErrBusy) {
		t.Fatalf("concurrent call: %v", err)
	}
}

func TestScrollAmountsScaleWithTheView(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	c.SetView(wire.View{Width: 100, Height: 50}) // half the 200×100 screen
	if _, err := c.Screenshot(ctx5(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Scroll(ctx5(t), 10, 10, -3, 120); err != nil {
		t.Fatal(err)
	}
	done, _ := f.exec.snapshot()
	if got := done[len(done)-1]; got.ScrollX != -6 || got.ScrollY != 240 {
		t.Fatalf("image scroll (-3,120) → screen (%d,%d), want (-6,240)", got.ScrollX, got.ScrollY)
	}
}

func TestScaleDistance(t *testing.T) {
	cases := []struct{ d, screen, image, want int }{
		{0, 1440, 1280, 0}, {100, 1440, 1280, 113}, {-100, 1440, 1280, -113},
		{1, 100, 1000, 1}, {-1, 100, 1000, -1}, {7, 200, 200, 7},
	}
	for _, c := range cases {
		if got := scaleDistance(c.d, c.screen, c.image); got != c.want {
			t.Errorf("scaleDistance(%d, %d, %d) = %d, want %d", c.d, c.screen, c.image, got, c.want)
		}
	}
}
