package vm

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/prereq"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/scaling"
)

// TestArm64AgentdUnderQemu is the proof that the agentd shipped into arm64
// VMs works: the cross-compiled binary (make agentd-linux-arm64) runs here
// under qemu-user, its loader and libraries (libX11, libXtst) from Debian's
// arm64 multiarch packages (make cross-deps), against a private Xvfb, and
// passes a subset of agentd's integration behaviour: the hello, screenshot
// pixels exact at native size and in a crop, a click seen by an X client
// at the exact point, and typed Unicode text.
//
// It needs AGENTD_ARM64_BIN (the binary); it skips without it, qemu-aarch64
// or Xvfb, unless AGENTD_REQUIRE_CROSS is set: then it fails.
func TestArm64AgentdUnderQemu(t *testing.T) {
	missing := func(format string, args ...any) {
		t.Helper()
		prereq.Missing(t, prereq.Cross, format, args...)
	}
	bin := os.Getenv("AGENTD_ARM64_BIN")
	if bin == "" {
		missing("requires AGENTD_ARM64_BIN, the arm64 agentd (make agentd-linux-arm64, then AGENTD_ARM64_BIN=$PWD/bin/agentd-linux-arm64)")
	}
	if err := checkBinary("agentd", bin, "aarch64"); err != nil {
		t.Fatal(err)
	}
	qemu, err := exec.LookPath("qemu-aarch64")
	if err != nil {
		missing("requires qemu-aarch64 (make cross-deps): %v", err)
	}
	if _, err := exec.LookPath("Xvfb"); err != nil {
		missing("requires Xvfb (make deps): %v", err)
	}

	x := xvfbtest.Start(t, 1024, 768)
	rec := xrecorder.Start(t, x.Display)
	addr := startQemuAgentd(t, qemu, bin, x.Display)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := guest.Dial(ctx, addr, qemuToken)
	if err != nil {
		t.Fatalf("dial the arm64 agentd: %v", err)
	}
	defer c.Close()

	t.Run("hello", func(t *testing.T) {
		h := c.Hello()
		if h.Screen.W != 1024 || h.Screen.H != 768 || !slices.Contains(h.Capabilities, "batch") {
			t.Errorf("hello %+v", h)
		}
	})

	t.Run("screenshot pixels", func(t *testing.T) {
		red, green, blue := color.RGBA{220, 20, 20, 255}, color.RGBA{20, 200, 40, 255}, color.RGBA{30, 40, 210, 255}
		rec.Fill(t, 100, 100, 200, 100, red)
		rec.Fill(t, 600, 400, 100, 100, green)
		rec.Fill(t, 0, 0, 10, 10, blue)
		for _, tc := range []struct {
			name   string
			view   wire.View
			sx, sy int
			want   color.RGBA
		}{
			{"native", wire.View{}, 150, 150, red},
			{"native", wire.View{}, 650, 450, green},
			{"native", wire.View{}, 0, 0, blue},
			{"native", wire.View{}, 9, 9, blue},
			{"crop", wire.View{Crop: &scaling.Rect{X: 550, Y: 350, W: 200, H: 150}}, 650, 450, green},
		} {
			c.SetView(tc.view)
			shot, err := c.Screenshot(ctx)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			img, err := png.Decode(bytes.NewReader(shot.PNG))
			if err != nil {
				t.Fatalf("%s: not a PNG: %v", tc.name, err)
			}
			ix, iy, err := shot.Transform.ToImage(tc.sx, tc.sy)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			r, g, b, _ := img.At(ix, iy).RGBA()
			if got := (color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}); got != tc.want {
				t.Errorf("%s: screen (%d,%d) → image (%d,%d) is %v, want %v", tc.name, tc.sx, tc.sy, ix, iy, got, tc.want)
			}
		}
	})

	t.Run("click", func(t *testing.T) {
		// Actions are in the latest screenshot's image space: the whole screen.
		c.SetView(wire.View{})
		if _, err := c.Screenshot(ctx); err != nil {
			t.Fatal(err)
		}
		rec.Clear()
		if _, err := c.Click(ctx, 321, 234, actions.Left, "shift"); err != nil {
			t.Fatal(err)
		}
		ev := rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease }, time.Minute)
		if ev.X != 321 || ev.Y != 234 || ev.Button != 1 || ev.State&xrecorder.ShiftMask == 0 {
			t.Errorf("shift+click at (321,234) arrived as %v", ev)
		}
	})

	t.Run("type", func(t *testing.T) {
		rec.Clear()
		text := "Zoë Łukasz, 東京 ✓\nline two"
		if _, err := c.Type(ctx, text); err != nil {
			t.Fatal(err)
		}
		rec.WaitTyped(t, text, time.Minute)
		if keys, mask := rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
			t.Errorf("left pressed after typing: keys %v mask %#x", keys, mask)
		}
	})
}

const qemuToken = "qemu-arm64-test-token-0123456789abcdef"

// startQemuAgentd runs bin under qemu on display and returns the address
// agentd listens on. agentd is stopped when the test ends; its output is
// logged if the test failed.
func startQemuAgentd(t *testing.T, qemu, bin, display string) string {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(qemuToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(qemu, bin, "--display", display, "--listen", "127.0.0.1:0",
		"--addr-file", addrFile, "--token-file", tokenFile)
	// Emulated, agentd takes a while to start.
	addr, _ := agentdtest.Start(t, cmd, addrFile, 2*time.Minute)
	return addr
}
