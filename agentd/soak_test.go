//go:build linux && cgo

package agentd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/scaling"
)

// usage is what the soak watches: live heap, resident memory, goroutines
// and the shared memory segments this process created.
type usage struct {
	heap, rss  uint64
	goroutines int
	segments   int
}

func (u usage) String() string {
	return fmt.Sprintf("heap in use %.1f MiB, RSS %.1f MiB, %d goroutines, %d shm segments",
		float64(u.heap)/(1<<20), float64(u.rss)/(1<<20), u.goroutines, u.segments)
}

func measure(t *testing.T) usage {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	u := usage{heap: m.HeapInuse, goroutines: runtime.NumGoroutine(), segments: ownSegments(t)}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("missing /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			u.rss = kb << 10
		}
	}
	return u
}

// ownSegments counts the System V shared memory segments this process
// created (the ipcs -m lines whose creator is this process).
func ownSegments(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Fatalf("missing /proc/sysvipc/shm: %v", err)
	}
	n := 0
	pid := strconv.Itoa(os.Getpid())
	for _, line := range strings.Split(string(data), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 4 && f[4] == pid {
			n++
		}
	}
	return n
}

// systemSegments is the number of segments ipcs -m lists machine-wide, for
// the report only: other processes come and go.
func systemSegments() string {
	out, err := exec.Command("ipcs", "-m").Output()
	if err != nil {
		return "ipcs unavailable"
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && strings.HasPrefix(f[0], "0x") {
			n++
		}
	}
	return strconv.Itoa(n)
}

// soakAction cycles through every kind of action, with modifiers, Unicode
// text and drags, on a w×h image.
func soakAction(i, w, h int) actions.Action {
	x, y := (i*37)%(w-20)+10, (i*53)%(h-20)+10
	switch i % 8 {
	case 0:
		return actions.Action{Type: actions.Click, X: x, Y: y, Button: actions.Left}
	case 1:
		return actions.Action{Type: actions.Move, X: x, Y: y, Keys: []string{"shift"}}
	case 2:
		return actions.Action{Type: actions.Keypress, Keys: []string{"ctrl", "a"}}
	case 3:
		return actions.Action{Type: actions.Scroll, X: x, Y: y, ScrollY: 120}
	case 4:
		return actions.Action{Type: actions.TypeText, Text: fmt.Sprintf("soak %d Zoë ✓", i)}
	case 5:
		return actions.Action{Type: actions.DoubleClick, X: x, Y: y}
	case 6:
		return actions.Action{Type: actions.Drag, Path: []actions.Point{{X: x, Y: y}, {X: w - 1 - x, Y: h - 1 - y}}, Keys: []string{"ctrl"}}
	default:
		return actions.Action{Type: actions.Click, X: x, Y: y, Button: actions.Right}
	}
}

// TestSoak runs AGENTD_SOAK screenshots and as many actions against one
// agentd on a real Xvfb, through one session, and checks that the heap,
// the goroutines and the shared memory segments end where they started.
// make reliability runs a short one; the full one is
// AGENTD_SOAK=10000 go test -run TestSoak -timeout 60m ./agentd/.
func TestSoak(t *testing.T) {
	n, _ := strconv.Atoi(prereq.OptIn(t, "AGENTD_SOAK", "the soak (N screenshots and actions)"))
	if n <= 0 {
		t.Fatalf("AGENTD_SOAK=%q: want a number of screenshots and actions", os.Getenv("AGENTD_SOAK"))
	}
	w, h := 1440, 900
	if raceEnabled {
		w, h = 640, 400 // the race detector makes every pixel slow
	}
	d := newDesktopServer(t, w, h, func(string, ...any) {})
	views := []wire.View{{}, {Width: 1280, Height: 800, Fit: true}, {Crop: &scaling.Rect{X: 10, Y: 10, W: w / 2, H: h / 2}}}
	ctx := context.Background()
	run := func(c *guest.Client, from, to int) {
		for i := from; i < to; i++ {
			c.SetView(views[i%len(views)])
			shot, err := c.Screenshot(ctx)
			if err != nil {
				t.Fatalf("screenshot %d: %v", i, err)
			}
			// In the image space of that screenshot, as a model sends them.
			a := soakAction(i, shot.Transform.Image.W, shot.Transform.Image.H)
			if _, err := c.Do(ctx, a); err != nil {
				t.Fatalf("action %d (%s): %v", i, a.Type, err)
			}
			if i%100 == 0 {
				d.rec.Clear() // the test's recorder, not agentd, would grow
			}
		}
	}

	idle := measure(t)
	c, err := guest.Dial(ctx5(t), d.addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	warm := min(50, n)
	run(c, 0, warm) // buffers, keymap bindings, connection state
	d.rec.Clear()
	before := measure(t)
	start := time.Now()
	run(c, warm, warm+n)
	elapsed := time.Since(start)
	d.rec.Clear()
	after := measure(t)
	c.Close()
	poll.Until(t, 5*time.Second, "the session's goroutines to end", func() bool { return runtime.NumGoroutine() <= idle.goroutines })
	ended := measure(t)

	t.Logf("soak: %d screenshots (native, fitted into 1280×800, cropped in turn) and %d actions on %d×%d in %s",
		n, n, w, h, elapsed.Round(time.Second))
	t.Logf("soak: idle      %v", idle)
	t.Logf("soak: before    %v", before)
	t.Logf("soak: after     %v", after)
	t.Logf("soak: ended     %v", ended)
	t.Logf("soak: ipcs -m lists %s segments machine-wide", systemSegments())
	if after.goroutines != before.goroutines {
		t.Errorf("goroutines %d → %d during the session", before.goroutines, after.goroutines)
	}
	if ended.goroutines != idle.goroutines {
		t.Errorf("goroutines %d before the session, %d after it", idle.goroutines, ended.goroutines)
	}
	if after.segments != before.segments || ended.segments != idle.segments {
		t.Errorf("shm segments: idle %d, before %d, after %d, ended %d", idle.segments, before.segments, after.segments, ended.segments)
	}
	const heapSlack = 4 << 20
	if after.heap > before.heap+heapSlack {
		t.Errorf("the heap grew by %.1f MiB over the soak", float64(after.heap-before.heap)/(1<<20))
	}
	const rssSlack = 16 << 20
	if after.rss > before.rss+rssSlack {
		t.Errorf("RSS grew by %.1f MiB over the soak", float64(after.rss-before.rss)/(1<<20))
	}
}
