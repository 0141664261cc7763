//go:build linux

package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/capture/pngenc"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/scaling"
)

func TestMain(m *testing.M) {
	// xgb logs every connection without an Xauthority file, and every lost
	// server; the tests provoke both.
	xgb.Logger = log.New(io.Discard, "", 0)
	registerDecoders()
	os.Exit(m.Run())
}

// registerDecoders opens a Capturer once while no other X connection of
// the tests exists, so that xgb's process-wide decoder tables are written
// (see initExtension) before any test's connection reads them.
func registerDecoders() {
	srv, err := xvfbtest.Launch(64, 48)
	if err != nil {
		return // the tests that need Xvfb say why
	}
	defer srv.Stop()
	if c, err := Open(srv.Display, Options{}); err == nil {
		_ = c.Close()
	}
}

const block = 50

// patternColour is the colour of the pattern at (x, y): flat 50×50 blocks,
// each a different colour, so both positions and colours are checked.
func patternColour(x, y int) color.RGBA {
	bx, by := x/block, y/block
	return color.RGBA{uint8(bx*23 + 7), uint8(by*41 + 3), uint8((bx*7 + by*13) * 5), 0xff}
}

// paint covers the screen with a window showing the pattern and waits until
// the server has drawn it. The window lives as long as the test.
func paint(t testing.TB, display string) {
	t.Helper()
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("paint: connect %s: %v", display, err)
	}
	t.Cleanup(conn.Close)
	scr := xproto.Setup(conn).DefaultScreen(conn)
	w, h := int(scr.WidthInPixels), int(scr.HeightInPixels)
	win, err := xproto.NewWindowId(conn)
	if err != nil {
		t.Fatal(err)
	}
	err = xproto.CreateWindowChecked(conn, 0, win, scr.Root, 0, 0, uint16(w), uint16(h), 0,
		xproto.WindowClassInputOutput, scr.RootVisual,
		xproto.CwBackPixel|xproto.CwOverrideRedirect|xproto.CwEventMask,
		[]uint32{0, 1, xproto.EventMaskExposure}).Check()
	if err != nil {
		t.Fatalf("paint: create window: %v", err)
	}
	if err := xproto.MapWindowChecked(conn, win).Check(); err != nil {
		t.Fatal(err)
	}
	waitExpose(t, conn)
	gc, _ := xproto.NewGcontextId(conn)
	xproto.CreateGC(conn, gc, xproto.Drawable(win), 0, nil)
	for y := 0; y < h; y += block {
		for x := 0; x < w; x += block {
			c := patternColour(x, y)
			xproto.ChangeGC(conn, gc, xproto.GcForeground, []uint32{uint32(c.R)<<16 | uint32(c.G)<<8 | uint32(c.B)})
			xproto.PolyFillRectangle(conn, xproto.Drawable(win), gc, []xproto.Rectangle{{X: int16(x), Y: int16(y), Width: block, Height: block}})
		}
	}
	if _, err := xproto.GetInputFocus(conn).Reply(); err != nil { // round trip: all drawn
		t.Fatal(err)
	}
}

func waitExpose(t testing.TB, conn *xgb.Conn) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		for {
			ev, xerr := conn.WaitForEvent()
			switch {
			case ev == nil && xerr == nil:
				got <- errors.New("connection closed")
				return
			case xerr != nil:
				got <- xerr
				return
			}
			if _, ok := ev.(xproto.ExposeEvent); ok {
				got <- nil
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("paint: waiting for Expose: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("paint: window never exposed")
	}
}

// checkPattern compares every pixel of img with the pattern.
func checkPattern(t testing.TB, img *image.RGBA, w, h int) {
	t.Helper()
	if img.Bounds() != image.Rect(0, 0, w, h) {
		t.Fatalf("bounds %v, want %dx%d", img.Bounds(), w, h)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if got, want := img.RGBAAt(x, y), patternColour(x, y); got != want {
				t.Fatalf("pixel (%d, %d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

func open(t testing.TB, display string, m Method) *Capturer {
	t.Helper()
	c, err := Open(display, Options{Method: m})
	if err != nil {
		t.Fatalf("Open(%s, %q): %v", display, m, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Odd sizes leave partial blocks at the right and bottom edges.
const testW, testH = 530, 410

func TestCaptureMethodsSamePixels(t *testing.T) {
	srv := xvfbtest.Start(t, testW, testH)
	paint(t, srv.Display)
	t.Setenv("DISPLAY", srv.Display) // kbinani reads it
	for _, m := range []Method{MethodAuto, MethodSHM, MethodGetImage, MethodKbinani} {
		t.Run(string(m), func(t *testing.T) {
			c := open(t, srv.Display, m)
			want := m
			if m == MethodAuto {
				want = MethodSHM
			}
			if c.Method() != want {
				t.Fatalf("method %q, want %q", c.Method(), want)
			}
			if w, h := c.Size(); w != testW || h != testH {
				t.Fatalf("size %dx%d", w, h)
			}
			img, err := c.Capture(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			checkPattern(t, img, testW, testH)
			again, err := c.Capture(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if m != MethodKbinani && again != img {
				t.Fatal("the capture buffer was not reused")
			}
		})
	}
}

// TestCaptureThroughScaler checks colours at points mapped through scaled
// and cropped transforms, away from block edges.
func TestCaptureThroughScaler(t *testing.T) {
	srv := xvfbtest.Start(t, testW, testH)
	paint(t, srv.Display)
	c := open(t, srv.Display, MethodAuto)
	img, err := c.Capture(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	scr := scaling.Size{W: testW, H: testH}
	views := []struct {
		crop   *scaling.Rect
		w, h   int
		fit    bool
		margin int
	}{
		{nil, 0, 0, false, 0},
		{nil, 400, 300, true, 6},
		{nil, 265, 300, false, 8},
		{&scaling.Rect{X: 120, Y: 80, W: 400, H: 300}, 0, 0, false, 0},
		{&scaling.Rect{X: 120, Y: 80, W: 400, H: 300}, 200, 150, true, 8},
		{&scaling.Rect{X: 333, Y: 211, W: 101, H: 77}, 404, 308, false, 3},
	}
	var scaler scaling.Scaler
	var enc pngenc.Encoder
	for _, v := range views {
		tr, err := scaling.New(scr, v.crop, v.w, v.h, v.fit)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		scaled, err := scaler.Scale(img, tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(&buf, scaled); err != nil {
			t.Fatal(err)
		}
		out, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if out.Bounds().Dx() != tr.Image.W || out.Bounds().Dy() != tr.Image.H {
			t.Fatalf("%+v: image %v", tr, out.Bounds())
		}
		checked := 0
		for iy := 0; iy < tr.Image.H; iy += 3 {
			for ix := 0; ix < tr.Image.W; ix += 3 {
				sx, sy, err := tr.ToScreen(ix, iy)
				if err != nil {
					t.Fatal(err)
				}
				if sx%block < v.margin || sx%block >= block-v.margin || sy%block < v.margin || sy%block >= block-v.margin {
					continue
				}
				checked++
				got := color.RGBAModel.Convert(out.At(ix, iy)).(color.RGBA)
				if want := patternColour(sx, sy); got != want {
					t.Fatalf("%+v: image (%d, %d) → screen (%d, %d): %v, want %v", tr, ix, iy, sx, sy, got, want)
				}
			}
		}
		if checked < 500 {
			t.Fatalf("%+v: only %d points checked", tr, checked)
		}
	}
}

func TestCursor(t *testing.T) {
	srv := xvfbtest.Start(t, 320, 200)
	paint(t, srv.Display)
	conn, err := xgb.NewConnDisplay(srv.Display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	if err := xproto.WarpPointerChecked(conn, 0, root, 0, 0, 0, 0, 120, 80).Check(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []Method{MethodSHM, MethodGetImage} {
		c, err := Open(srv.Display, Options{Method: m, Cursor: true})
		if err != nil {
			t.Fatal(err)
		}
		img, err := c.Capture(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		near, far := 0, 0
		for y := 0; y < 200; y++ {
			for x := 0; x < 320; x++ {
				if img.RGBAAt(x, y) == patternColour(x, y) {
					continue
				}
				if x >= 120-32 && x < 120+32 && y >= 80-32 && y < 80+32 {
					near++
				} else {
					far++
				}
			}
		}
		if near == 0 || far != 0 {
			t.Fatalf("%s: %d changed pixels near the pointer, %d elsewhere", m, near, far)
		}
		_ = c.Close()
	}
	t.Setenv("DISPLAY", srv.Display)
	if _, err := Open(srv.Display, Options{Method: MethodKbinani, Cursor: true}); err == nil {
		t.Fatal("kbinani accepted Cursor")
	}
}

// TestSHMAttachFailureFallsBackToGetImage: a server that cannot attach our
// segment, or that in another IPC namespace, where our segment id may name
// some other segment, attaches that one without complaint, leaves Auto on
// GetImage and fails a forced SHM, leaking no segment.
func TestSHMAttachFailureFallsBackToGetImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		// segment is the id the server attaches in place of ours.
		segment func(t *testing.T) uint32
		want    string
	}{
		// The real server refuses a segment that does not exist, as it
		// would one in another IPC namespace.
		{"refused", func(*testing.T) uint32 { return 0x7ffffff0 }, "cannot attach"},
		{"wrong segment", func(t *testing.T) uint32 {
			decoy, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = unix.SysvShmCtl(decoy, unix.IPC_RMID, nil) })
			return uint32(decoy)
		}, "different segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := xvfbtest.Start(t, 320, 200)
			paint(t, srv.Display)
			id := tc.segment(t)
			before := shmSegments(t)
			orig := serverAttach
			t.Cleanup(func() { serverAttach = orig })
			serverAttach = func(c *xgb.Conn, seg shm.Seg, _ int) error {
				return shm.AttachChecked(c, seg, id, false).Check()
			}
			c := open(t, srv.Display, MethodAuto)
			if c.Method() != MethodGetImage {
				t.Fatalf("method %q after the failed attach", c.Method())
			}
			img, err := c.Capture(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			checkPattern(t, img, 320, 200)
			if _, err := Open(srv.Display, Options{Method: MethodSHM}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("forced shm: %v", err)
			}
			_ = c.Close()
			if after := shmSegments(t); len(after) != len(before) {
				t.Fatalf("segments leaked by the failed attaches: before %v, after %v", before, after)
			}
		})
	}
}

// shmSegments lists the ids of segments this process created.
func shmSegments(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		prereq.Missing(t, prereq.X, "/proc/sysvipc/shm: %v", err)
	}
	ids := map[string]bool{}
	pid := fmt.Sprint(os.Getpid())
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == pid { // shmid is f[1], cpid f[4]
			ids[f[1]] = true
		}
	}
	return ids
}

func TestSegmentMarkedForRemovalAndFreedOnClose(t *testing.T) {
	srv := xvfbtest.Start(t, 320, 200)
	before := shmSegments(t)
	c, err := Open(srv.Display, Options{Method: MethodSHM})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capture(context.Background()); err != nil {
		t.Fatal(err)
	}
	var desc unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(c.x.seg.id, unix.IPC_STAT, &desc); err != nil {
		t.Fatal(err)
	}
	const shmDest = 0o1000 // SHM_DEST: removed when the last user detaches
	if desc.Perm.Mode&shmDest == 0 || desc.Nattch != 2 {
		t.Fatalf("segment mode %#o, %d attached; want SHM_DEST and 2 (us and the server)", desc.Perm.Mode, desc.Nattch)
	}
	if desc.Perm.Mode&0o777 != 0o600 {
		t.Fatalf("segment permissions %#o, want 0600", desc.Perm.Mode&0o777)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if after := shmSegments(t); len(after) != len(before) {
		t.Fatalf("segments before %v, after Close %v", before, after)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	srv := xvfbtest.Start(t, 320, 200)
	base := runtime.NumGoroutine()
	for _, m := range []Method{MethodSHM, MethodGetImage} {
		c, err := Open(srv.Display, Options{Method: m})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := c.FrameHash(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// TestSteadyStateAllocations: a SHM capture allocates no pixels, only the
// small bookkeeping of two requests.
func TestSteadyStateAllocations(t *testing.T) {
	const w, h = 640, 400
	srv := xvfbtest.Start(t, w, h)
	c := open(t, srv.Display, MethodSHM)
	ctx := context.Background()
	if _, err := c.Capture(ctx); err != nil {
		t.Fatal(err)
	}
	const runs = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := c.Capture(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.FrameHash(ctx); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	bytes := (after.TotalAlloc - before.TotalAlloc) / (2 * runs)
	allocs := (after.Mallocs - before.Mallocs) / (2 * runs)
	t.Logf("shm: %d bytes in %d allocations per frame (a frame is %d bytes)", bytes, allocs, w*h*4)
	if bytes > 4<<10 {
		t.Fatalf("%d bytes allocated per steady-state capture", bytes)
	}
}

func TestFrameHash(t *testing.T) {
	srv := xvfbtest.Start(t, 320, 200)
	paint(t, srv.Display)
	c := open(t, srv.Display, MethodAuto)
	ctx := context.Background()
	h1, err := c.FrameHash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := c.FrameHash(ctx)
	if h1 != h2 {
		t.Fatal("hash changed on a still screen")
	}
	// Change one pixel.
	conn, err := xgb.NewConnDisplay(srv.Display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	gc, _ := xproto.NewGcontextId(conn)
	xproto.CreateGC(conn, gc, xproto.Drawable(root), xproto.GcForeground|xproto.GcSubwindowMode,
		[]uint32{0xffffff, xproto.SubwindowModeIncludeInferiors})
	xproto.PolyPoint(conn, xproto.CoordModeOrigin, xproto.Drawable(root), gc, []xproto.Point{{X: 161, Y: 99}})
	if _, err := xproto.GetInputFocus(conn).Reply(); err != nil {
		t.Fatal(err)
	}
	h3, _ := c.FrameHash(ctx)
	if h3 == h1 {
		t.Fatal("hash did not change with one pixel")
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := xvfbtest.Start(t, 320, 200)
	c := open(t, srv.Display, MethodAuto)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				if _, err := c.FrameHash(context.Background()); err != nil {
					t.Error(err)
					return
				}
				_, _ = c.Size()
				_ = c.Method()
			}
		})
	}
	wg.Wait()
}

func TestCloseAndErrors(t *testing.T) {
	srv := xvfbtest.Start(t, 320, 200)
	c := open(t, srv.Display, MethodAuto)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.Capture(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Capture after Close: %v", err)
	}

	if _, err := Open(srv.Display, Options{Method: "vnc"}); err == nil || !strings.Contains(err.Error(), `unknown method "vnc"`) {
		t.Fatalf("bad method: %v", err)
	}
	t.Setenv("DISPLAY", srv.Display)
	_, err := Open(":4999", Options{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), ":4999") || !strings.Contains(err.Error(), "kbinani") {
		t.Fatalf("Open on a display nobody serves: %v", err)
	}
	if _, err := Open(":4999", Options{Method: MethodKbinani}); err == nil || !strings.Contains(err.Error(), "$DISPLAY") {
		t.Fatalf("kbinani on another display: %v", err)
	}

	c = open(t, srv.Display, MethodAuto)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Capture(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// xserver is an Xvfb on a display number the test chose, so it can be
// stopped and started again on the same number (xvfbtest picks the lowest
// free number, which parallel test runs on this machine would race for).
type xserver struct {
	display string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// freeDisplay picks a random high display number nobody uses.
func freeDisplay(t *testing.T) string {
	for range 100 {
		n := 600 + rand.IntN(5000)
		_, sockErr := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n))
		_, lockErr := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n))
		if os.IsNotExist(sockErr) && os.IsNotExist(lockErr) {
			return fmt.Sprintf(":%d", n)
		}
	}
	t.Fatal("no free display number")
	return ""
}

// startXvfb runs `Xvfb :n` explicitly, as a restarted display would be, and
// waits for it to accept connections.
func startXvfb(t *testing.T, display string, w, h int) *xserver {
	t.Helper()
	prereq.Programs(t, prereq.X, "Xvfb")
	cmd := exec.Command("Xvfb", display, "-screen", "0", fmt.Sprintf("%dx%dx24", w, h), "-nolisten", "tcp", "-noreset")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &xserver{display: display, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.stop)
	sock := "/tmp/.X11-unix/X" + strings.TrimPrefix(display, ":")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-s.exited:
			t.Fatalf("Xvfb %s exited at start (display taken?)", display)
		case <-deadline:
			t.Fatalf("Xvfb %s did not come up", display)
		case <-time.After(20 * time.Millisecond):
		}
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			return s
		}
	}
}

// stop ends the server (resuming it first if stopped) and waits for it.
func (s *xserver) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func TestReconnect(t *testing.T) {
	display := freeDisplay(t)
	srv := startXvfb(t, display, 320, 200)
	paint(t, display)
	c := open(t, display, MethodAuto)
	ctx := context.Background()
	img, err := c.Capture(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkPattern(t, img, 320, 200)

	srv.stop()
	for range 2 { // the first notices the loss, the second fails to reconnect
		_, err = c.Capture(ctx)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), display) {
			t.Fatalf("capture with the server gone: %v", err)
		}
	}
	t.Logf("while down: %v", err)

	startXvfb(t, display, 400, 300) // the same display, another size
	paint(t, display)
	img, err = c.Capture(ctx)
	if err != nil {
		t.Fatalf("capture after the server came back: %v", err)
	}
	checkPattern(t, img, 400, 300)
	if w, h := c.Size(); w != 400 || h != 300 || c.Method() != MethodSHM {
		t.Fatalf("after reconnect: %dx%d via %q", w, h, c.Method())
	}
}

// TestHungServer: a server that stops answering (SIGSTOP) cannot hold a
// capture beyond its context, and capturing works again once it resumes.
func TestHungServer(t *testing.T) {
	srv := startXvfb(t, freeDisplay(t), 320, 200)
	c := open(t, srv.display, MethodAuto)
	if _, err := c.Capture(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Capture(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("capture from a stopped server: %v after %v", err, time.Since(start))
	}
	if err := srv.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	paint(t, srv.display)
	img, err := c.Capture(context.Background())
	if err != nil {
		t.Fatalf("capture after the server resumed: %v", err)
	}
	checkPattern(t, img, 320, 200)
}
