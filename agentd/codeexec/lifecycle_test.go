//go:build linux

package codeexec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xrecorder"
)

// TestDeadlineKillsReleasesAndStartsFresh: a deadline stops a busy loop,
// releases the shift it held, and says the namespace is lost; the next call
// runs in a fresh namespace that says so.
func TestDeadlineKillsReleasesAndStartsFresh(t *testing.T) {
	d := newDesk(t)
	d.run(t, "kept = 1")
	d.rec.Clear()
	res := d.exec(t, "pyautogui.keyDown('shift')\nprint('holding')\nwhile True:\n    pass", 700*time.Millisecond)
	if !res.NamespaceLost || res.Stopped != "deadline" || !strings.HasPrefix(res.Output, "holding\n") ||
		!strings.Contains(res.Output, "deadline of 700ms") || res.Traceback != "" {
		t.Fatalf("deadline result: %+v", res)
	}
	if len(res.Released) != 1 || res.Released[0] != "key shift" {
		t.Fatalf("released %q, want the held shift", res.Released)
	}
	d.rec.Sync(t)
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask != 0 {
		t.Fatalf("after the deadline keys %v (mask %#x) are still down", keys, mask)
	}
	res = d.exec(t, "print('kept' in globals())", 0)
	if !res.FreshNamespace || res.Output != "False\n" {
		t.Fatalf("the call after a deadline: %+v", res)
	}
}

// TestCancelStopsTheWorker: cancelling the call stops the code at once; the
// error says the namespace is lost and the next call starts fresh.
func TestCancelStopsTheWorker(t *testing.T) {
	d := newDesk(t)
	d.run(t, "kept = 1")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := d.client.Exec(ctx, "pyautogui.mouseDown(10, 10)\nimport time\ntime.sleep(60)", 0)
	var e *guest.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Code != wire.CodeCancelled || !strings.Contains(e.Message, "namespace is lost") {
		t.Fatalf("cancelled exec: %v", err)
	}
	d.rec.Sync(t)
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask != 0 {
		t.Fatalf("after the cancel keys %v (mask %#x) are still down", keys, mask)
	}
	if res := d.exec(t, "print('kept' in globals())", 0); !res.FreshNamespace || res.Output != "False\n" {
		t.Fatalf("the call after a cancel: %+v", res)
	}
}

func TestWorkerExitLosesTheNamespace(t *testing.T) {
	d := newDesk(t)
	res := d.exec(t, "import os\nprint('bye')\nos._exit(3)", 0)
	if !res.NamespaceLost || res.Stopped != "exited" || !strings.Contains(res.Output, "bye\n") || !strings.Contains(res.Output, "exit status 3") {
		t.Fatalf("worker exit: %+v", res)
	}
	if res := d.exec(t, "print(1)", 0); !res.FreshNamespace || res.Output != "1\n" {
		t.Fatalf("after an exit: %+v", res)
	}
}

func TestFailsafeCorner(t *testing.T) {
	d := newDesk(t)
	d.rec.Clear()
	res := d.exec(t, "pyautogui.PAUSE = 0\npyautogui.moveTo(1439, 0)\npyautogui.click(100, 100)", 0)
	if !strings.Contains(res.Traceback, "pyautogui.FailSafeException") {
		t.Fatalf("a click with the pointer in a corner: %+v", res)
	}
	d.rec.Sync(t)
	if b := buttons(d.rec.Events()); len(b) != 0 {
		t.Fatalf("the fail-safe let a click through: %v", b)
	}
	if res := d.run(t, "pyautogui.FAILSAFE = False\npyautogui.click(100, 100)"); res.Traceback != "" {
		t.Fatal(res.Traceback)
	}
}

// TestDisplayAndCoordinatesThroughAScaledView: with the session's view
// fitted into 1280×800, screenshot() is that image, display() of a larger
// image is scaled into it and says so, and a point read off the displayed
// screenshot clicks the screen pixel it shows.
func TestDisplayAndCoordinatesThroughAScaledView(t *testing.T) {
	d := newDesk(t)
	d.client.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	shot, err := d.client.Screenshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d.rec.Fill(t, 900, 450, 40, 30, colorRed)
	res := d.run(t, `
pyautogui.PAUSE = 0
from PIL import Image
im = pyautogui.screenshot()
display(im)
display(Image.new("RGB", (2000, 1000), "white"))
import io
buf = io.BytesIO()
Image.new("RGB", (30, 20), "blue").save(buf, "PNG")
display(buf.getvalue())
# the red box, found in the screenshot the model sees
xs = [x for x in range(im.width) if im.getpixel((x, 470 * 800 // 900)) == (220, 20, 20)]
ys = [y for y in range(im.height) if im.getpixel((xs[0], y)) == (220, 20, 20)]
print(im.size, xs[0], ys[0])
pyautogui.click(xs[0], ys[0])
`)
	if len(res.Images) != 3 {
		t.Fatalf("images %+v, output %q", res.Images, res.Output)
	}
	sizes := [][2]int{{1280, 800}, {1280, 640}, {30, 20}}
	for i, im := range res.Images {
		img, err := png.Decode(bytes.NewReader(im.PNG))
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		if b := img.Bounds(); b.Dx() != sizes[i][0] || b.Dy() != sizes[i][1] || im.Width != b.Dx() || im.Height != b.Dy() {
			t.Fatalf("image %d is %v, described %d×%d, want %v", i, b, im.Width, im.Height, sizes[i])
		}
	}
	if sf := res.Images[1].ScaledFrom; sf == nil || sf.W != 2000 || sf.H != 1000 || !strings.Contains(res.Output, "scaled from 2000×1000 to fit the view") {
		t.Fatalf("the scaled image is not said to be: %+v %q", res.Images[1], res.Output)
	}
	ev := d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress }, 5*time.Second)
	var ix, iy int
	if _, err := fmtSscan(res.Output, &ix, &iy); err != nil {
		t.Fatalf("output %q: %v", res.Output, err)
	}
	wx, wy, err := shot.Transform.ToScreen(ix, iy)
	if err != nil {
		t.Fatal(err)
	}
	if ev.X != wx || ev.Y != wy || ev.X < 900 || ev.X >= 940 || ev.Y < 450 || ev.Y >= 480 {
		t.Fatalf("image point (%d,%d) clicked screen (%d,%d); want (%d,%d), inside the red box", ix, iy, ev.X, ev.Y, wx, wy)
	}
	if res := d.exec(t, "pyautogui.click(1280, 5)", 0); !strings.Contains(res.Traceback, "outside the 1280×800 screen") {
		t.Fatalf("a point outside the view: %+v", res)
	}
}

// TestWorkerNeverSeesTheToken: agentd has the token in its environment; the
// worker's environment is built from nothing, and agentd's own /proc files
// are closed to it (agentd runs as a plain user, as in the guests).
func TestWorkerNeverSeesTheToken(t *testing.T) {
	requirePIL(t)
	d := startAgentdAs(t, 640, 480, true, "--code")
	res := d.run(t, `
import os
env = open('/proc/self/environ', 'rb').read()
print(b'AGENTD_TOKEN' in env, b'codeexec-test-token' in env, sorted(os.environ))
try:
    open('/proc/%d/environ' % os.getppid(), 'rb').read()
    print('parent environ readable')
except OSError as e:
    print('parent environ closed')
`)
	if !strings.HasPrefix(res.Output, "False False ['HOME', 'LANG', 'PATH', 'PYTHONDONTWRITEBYTECODE', 'PYTHONIOENCODING']") {
		t.Fatalf("output %q", res.Output)
	}
	if !strings.Contains(res.Output, "parent environ closed") {
		t.Fatalf("the worker reads agentd's environment: %q", res.Output)
	}
}

func TestOutputCapIsMarked(t *testing.T) {
	d := newDesk(t)
	res := d.run(t, "for i in range(20000):\n    print('line', i)")
	if !res.OutputTruncated || !strings.Contains(res.Output, "[output truncated: at most 65536 bytes per call]") || len(res.Output) > 66000 {
		t.Fatalf("truncated %v, %d bytes, tail %q", res.OutputTruncated, len(res.Output), res.Output[max(0, len(res.Output)-100):])
	}
	res = d.run(t, "from PIL import Image\nfor i in range(10):\n    display(Image.new('RGB', (10, 10)))")
	if len(res.Images) != 8 || res.ImagesDropped != 2 || !strings.Contains(res.Output, "image 10 dropped: at most 8 images per call") {
		t.Fatalf("images %d dropped %d output %q", len(res.Images), res.ImagesDropped, res.Output)
	}
}

// TestExecRefusedWithoutCode: an agentd started without --code says so.
func TestExecRefusedWithoutCode(t *testing.T) {
	d := startAgentd(t, 640, 480)
	_, err := d.client.Exec(context.Background(), "print(1)", 0)
	var e *guest.Error
	if !errors.As(err, &e) || e.Code != wire.CodeUnavailable || !strings.Contains(e.Message, "without --code") {
		t.Fatalf("exec without --code: %v", err)
	}
	for _, c := range d.client.Hello().Capabilities {
		if c == "exec" {
			t.Fatal("agentd without --code announces exec")
		}
	}
}

var colorRed = color.RGBA{220, 20, 20, 255}

// fmtSscan reads the point the code printed on its last line.
func fmtSscan(out string, x, y *int) (int, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var w, h int
	return fmt.Sscanf(lines[len(lines)-1], "(%d, %d) %d %d", &w, &h, x, y)
}

// TestWorkerCannotReadTheTokenFile: with a token file, the worker closes it
// to itself (Landlock) and its seccomp filter refuses signals to its keeper
// and to agentd and io_uring, while the rest of the file system and PIL work
// as before. agentd runs as a plain user (nobody, for a test run as root),
// so the worker is agentd's own user: file permissions alone would let it
// read the token and signal agentd, and only the sandbox stops it.
func TestWorkerCannotReadTheTokenFile(t *testing.T) {
	requirePIL(t)
	// Not t.TempDir: its parent is closed to nobody.
	dir, err := os.MkdirTemp("", "agentd-token-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(tokenFile, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	d := startAgentdAs(t, 640, 480, true, "--code", "--token-file", tokenFile)
	res := d.run(t, fmt.Sprintf(`
import ctypes, os, signal
keeper = os.getppid()
agentd = int(open('/proc/%%d/stat' %% keeper).read().rsplit(')', 1)[1].split()[1])
libc = ctypes.CDLL(None, use_errno=True)
def io_uring():
    if libc.syscall(425, 8, ctypes.create_string_buffer(120)) < 0:
        raise OSError(ctypes.get_errno(), 'io_uring_setup')
for what, f in [("token", lambda: open(%q).read()), ("kill keeper", lambda: os.kill(keeper, 0)),
                ("kill agentd", lambda: os.kill(agentd, 0)), ("io_uring", io_uring)]:
    try:
        f()
        print(what, "allowed")
    except OSError as e:
        print(what, "refused", os.strerror(e.errno))
open("note.txt", "w").write("ok")
print(open("note.txt").read(), len(open("/etc/os-release").read()) > 0, pyautogui.screenshot().size, agentd == %d)
`, tokenFile, d.pid))
	if strings.Contains(d.log.String(), "Landlock is not available") {
		prereq.Missing(t, prereq.X, "Landlock in this kernel: %s", d.log.String())
	}
	want := "token refused Permission denied\nkill keeper refused Operation not permitted\nkill agentd refused Operation not permitted\n" +
		"io_uring refused Function not implemented\nok True (640, 480) True\n"
	if res.Output != want {
		t.Fatalf("output %q, want %q", res.Output, want)
	}
}

// TestThreadBetweenCalls: a thread the code leaves running may print and
// click after its call ended: it waits for the next call, during which the
// worker keeps the pipes in order and agentd serves it.
func TestThreadBetweenCalls(t *testing.T) {
	d := newDesk(t)
	d.rec.Clear()
	d.run(t, "import threading\nclicked = threading.Event()\ndef bg():\n    time.sleep(0.3)\n    print('from the thread')\n"+
		"    pyautogui.click(50, 60)\n    clicked.set()\nthreading.Thread(target=bg).start()")
	res := d.run(t, "clicked.wait(30)\nprint('second')")
	if !strings.Contains(res.Output, "from the thread\n") || !strings.HasSuffix(res.Output, "second\n") {
		t.Fatalf("output %q", res.Output)
	}
	d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease && e.X == 50 && e.Y == 60 }, 5*time.Second)
}
