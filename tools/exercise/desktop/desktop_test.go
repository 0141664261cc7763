package desktop

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"image"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/tools/exercise/form"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/agentd-dev/agentd/local"
)

// requireDesktop ends the test as prereq does when a program of the
// desktop is missing.
func requireDesktop(t *testing.T) {
	t.Helper()
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad", "xdotool")
}

// TestDesktopWithXdotool brings the exercise desktop up on a local guest and
// drives it the way the scripted model will, by the layout constants:
// fill in and submit the form, type a note and save it; then it reads the
// results back from the files. Set EXERCISE_SCREENSHOTS to a directory to
// keep screenshots of the steps.
func TestDesktopWithXdotool(t *testing.T) {
	requireDesktop(t)
	prereq.Full(t, "starting Firefox")
	dir := t.TempDir()
	desk, err := Prepare(Config{Dir: filepath.Join(dir, "exercise")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = desk.Close() }) // runs after the guest's Down below
	name := "Zoë Ñúñez-Łukasz"
	note := "Pickup note\nZoë Ñúñez-Łukasz 2025-03-14 ✓ 日本\n"
	cfg := local.Config{
		StateDir:   filepath.Join(dir, "desktop"),
		AgentdPath: agentdtest.Binary(t),
		// Before the apps start: xdotool changes the keyboard map per
		// character, and openbox re-grabs its bindings on each change,
		// holding clicks back meanwhile (agentd binds a text's characters
		// in one change instead; see exercise/typing_test.go).
		Setup: func(_ context.Context, env []string) error { return bindKeysyms(env, name+note) },
	}
	desk.Configure(&cfg)

	start := time.Now()
	g, err := local.Up(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("desktop up on %s in %v", g.Display, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _ = g.Down(context.Background()) }) // if the test stops early
	x := &xdo{t: t, env: g.Env()}

	for class, want := range map[string]image.Rectangle{
		BrowserClass: image.Rect(BrowserX, BrowserY, BrowserX+BrowserWidth, BrowserY+BrowserHeight),
		EditorClass:  image.Rect(EditorX, EditorY, EditorX+EditorWidth, EditorY+EditorHeight),
	} {
		if got, err := g.Window(class); err != nil || got != want {
			t.Errorf("window %s at %v (%v), want %v", class, got, err, want)
		}
	}
	checkSandboxed(t, desk)
	x.screenshot("1-ready")

	// The form, by the layout constants. The browser starts focused.
	waitFocus(t, g, BrowserClass)
	x.click(NameFieldX, NameFieldY)
	x.typeText(name)
	x.click(DateFieldX, DateFieldY)
	x.typeText("2025-03-14")
	x.click(SlotOptionX, SlotAfternoonY)
	x.click(FragileX, FragileY)
	x.screenshot("2-filled")
	x.click(SubmitX, SubmitY)
	recs := poll.For(t, 15*time.Second, "the record", func() ([]form.Record, bool) {
		r, err := desk.Record.Records()
		return r, err == nil && len(r) > 0
	})
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Name != name || r.Date != "2025-03-14" || r.Slot != "Afternoon" || !r.Fragile {
		t.Errorf("record %+v, want name %q, date 2025-03-14, slot Afternoon, fragile", r, name)
	}

	// The editor: type two lines (one not ASCII) and save with ctrl+s.
	x.click(EditorTextX, EditorTextY)
	// The window manager moves the focus when it handles the click, after
	// xdotool returns: typing at once could reach the browser.
	waitFocus(t, g, EditorClass)
	x.typeText(note)
	x.run("key", "ctrl+s")
	got := poll.For(t, 15*time.Second, "the saved note", func() ([]byte, bool) {
		b, err := os.ReadFile(desk.NoteFile)
		return b, err == nil && len(b) >= len(note)
	})
	x.screenshot("3-done")
	if !bytes.Equal(got, []byte(note)) {
		t.Errorf("note file %q, want %q", got, note)
	}

	start = time.Now()
	if err := g.Down(context.Background()); err != nil {
		t.Errorf("Down: %v", err)
	}
	t.Logf("desktop down in %v", time.Since(start).Round(time.Millisecond))
	// Firefox's crash helper leaves the process group (setsid): Down must
	// still leave nothing running. Its command line names the guest's dir.
	for pid, args := range commandLines() {
		if strings.Contains(strings.Join(args, " "), dir) {
			t.Errorf("process %s of the guest still running after Down: %q", pid, args)
		}
	}
}

// commandLines returns the command line of every process, by pid. The
// Firefox fork server rewrites its children's as one string with spaces,
// so they are split on spaces too.
func commandLines() map[string][]string {
	out := map[string][]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && len(cmd) > 0 {
			out[e.Name()] = strings.Fields(strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// checkSandboxed checks that the browser's content processes run in
// Firefox's sandbox (a seccomp filter), although we may be root. They are
// found by command line: the sandbox makes their environment unreadable.
func checkSandboxed(t *testing.T, desk *Desktop) {
	t.Helper()
	cmdlines := commandLines()
	parent := ""
	for pid, args := range cmdlines {
		if slices.Contains(args, desk.profile) {
			parent = pid
			if slices.Contains(args, "--no-sandbox") {
				t.Errorf("browser runs with --no-sandbox: %q", args)
			}
		}
	}
	if parent == "" {
		t.Fatal("browser process not found")
	}
	tabs := 0
	for pid, args := range cmdlines {
		i := slices.Index(args, "-parentPid")
		if i < 0 || i+1 >= len(args) || args[i+1] != parent || args[len(args)-1] != "tab" {
			continue
		}
		tabs++
		// Firefox keeps a spare content process that sandboxes itself as it
		// finishes starting, so a process seen early gets a few seconds.
		var status []byte
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var err error
			status, err = os.ReadFile(filepath.Join("/proc", pid, "status"))
			if err != nil || bytes.Contains(status, []byte("\nSeccomp:\t2\n")) {
				break // gone, or sandboxed
			}
			if time.Now().After(deadline) {
				t.Errorf("content process %s has no seccomp filter:\n%s", pid, status)
				break
			}
		}
	}
	if tabs == 0 {
		t.Error("found no content process of the browser")
	}
}

// xdo runs xdotool against the guest's display.
type xdo struct {
	t   *testing.T
	env []string
}

func (x *xdo) run(args ...string) {
	x.t.Helper()
	cmd := exec.Command("xdotool", args...)
	cmd.Env = append(os.Environ(), x.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		x.t.Fatalf("xdotool %q: %v\n%s", args, err, out)
	}
}

func (x *xdo) click(px, py int) {
	x.t.Helper()
	x.run("mousemove", strconv.Itoa(px), strconv.Itoa(py), "click", "1")
}

// typeText types text: newlines as Return, the rest with xdotool type.
func (x *xdo) typeText(text string) {
	x.t.Helper()
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			x.run("key", "Return")
		}
		if line != "" {
			x.run("type", "--delay", "30", line)
		}
	}
}

// bindKeysyms adds every non-ASCII character of text to the keyboard map,
// in one request, before the apps start. xdotool types a character
// missing from the map by binding it to a spare keycode just for that key
// press; clients read the map lazily, so under load they see the key after
// it was unbound and drop it (or see only one case of it). A static
// binding leaves xdotool nothing to race.
func bindKeysyms(env []string, text string) error {
	var pairs [][2]xproto.Keysym
	seen := map[rune]bool{}
	for _, r := range text {
		if r <= unicode.MaxASCII {
			continue
		}
		lo, up := unicode.ToLower(r), unicode.ToUpper(r)
		if seen[lo] {
			continue
		}
		seen[lo] = true
		pairs = append(pairs, [2]xproto.Keysym{keysym(lo), keysym(up)})
	}
	c, err := dialEnv(env)
	if err != nil {
		return err
	}
	defer c.Close()
	setup := xproto.Setup(c)
	first, last := int(setup.MinKeycode), int(setup.MaxKeycode)
	m, err := xproto.GetKeyboardMapping(c, setup.MinKeycode, byte(last-first+1)).Reply()
	if err != nil {
		return fmt.Errorf("keyboard map: %w", err)
	}
	per := int(m.KeysymsPerKeycode)
	free := func(code int) bool {
		for _, k := range m.Keysyms[(code-first)*per : (code-first+1)*per] {
			if k != 0 {
				return false
			}
		}
		return true
	}
	// Bind the highest free keycodes, rewriting the range from the first
	// of them to the last keycode at once: one request, one MappingNotify.
	var codes []int
	for code := last; code >= first && len(codes) < len(pairs); code-- {
		if free(code) {
			codes = append(codes, code)
		}
	}
	if len(codes) < len(pairs) {
		return fmt.Errorf("only %d free keycodes for %d characters", len(codes), len(pairs))
	}
	start := codes[len(codes)-1]
	syms := append([]xproto.Keysym(nil), m.Keysyms[(start-first)*per:]...)
	for i, code := range codes {
		syms[(code-start)*per], syms[(code-start)*per+1] = pairs[i][0], pairs[i][1]
	}
	n := last - start + 1
	if err := xproto.ChangeKeyboardMappingChecked(c, byte(n), xproto.Keycode(start), byte(per), syms).Check(); err != nil {
		return fmt.Errorf("change keyboard map: %w", err)
	}
	return nil
}

// waitFocus waits until the keyboard focus is in a window of class.
func waitFocus(t *testing.T, g *local.Guest, class string) {
	t.Helper()
	c, err := dialEnv(g.Env())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root := xproto.Setup(c).DefaultScreen(c).Root
	poll.For(t, 15*time.Second, "the focus in "+class, func() (string, bool) {
		f, err := xproto.GetInputFocus(c).Reply()
		if err != nil {
			return err.Error(), false
		}
		// The focus may be on a child of the application's window.
		for w := f.Focus; w != root && w != 0; {
			p, err := xproto.GetProperty(c, false, w, xproto.AtomWmClass, xproto.AtomString, 0, 64).Reply()
			if err != nil {
				return err.Error(), false
			}
			if parts := bytes.Split(bytes.TrimRight(p.Value, "\x00"), []byte{0}); len(parts) == 2 {
				return string(parts[1]), string(parts[1]) == class
			}
			tree, err := xproto.QueryTree(c, w).Reply()
			if err != nil {
				return err.Error(), false
			}
			w = tree.Parent
		}
		return "no application window", false
	})
}

// keysym is the X keysym of r: Latin-1 keysyms equal the code point, the
// others are Unicode keysyms.
func keysym(r rune) xproto.Keysym {
	if r >= 0xa0 && r <= 0xff {
		return xproto.Keysym(r)
	}
	return xproto.Keysym(0x1000000 + r)
}

// dialEnv connects to the display named by DISPLAY in env with the cookie
// in XAUTHORITY: the last 16 bytes of the guest's one-entry file.
func dialEnv(env []string) (*xgb.Conn, error) {
	var display, xauth string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "DISPLAY":
			display = v
		case "XAUTHORITY":
			xauth = v
		}
	}
	auth, err := os.ReadFile(xauth)
	if err != nil || len(auth) < 16 {
		return nil, fmt.Errorf("xauthority %q: %v", xauth, err)
	}
	nc, err := net.Dial("unix", "/tmp/.X11-unix/X"+strings.TrimPrefix(display, ":"))
	if err != nil {
		return nil, err
	}
	c, err := xgb.NewConnNetWithCookieHex(nc, hex.EncodeToString(auth[len(auth)-16:]))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// screenshot saves the screen as $EXERCISE_SCREENSHOTS/<name>.png.
func (x *xdo) screenshot(name string) {
	dir := os.Getenv("EXERCISE_SCREENSHOTS")
	if dir == "" {
		return
	}
	cmd := exec.Command("import", "-window", "root", filepath.Join(dir, name+".png"))
	cmd.Env = append(os.Environ(), x.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		x.t.Logf("screenshot %s: %v\n%s", name, err, out)
		return
	}
	x.t.Log(fmt.Sprintf("screenshot %s", filepath.Join(dir, name+".png")))
}
