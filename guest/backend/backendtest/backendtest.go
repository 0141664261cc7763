// Package backendtest is the conformance suite every guest backend passes,
// in the style of containerd's snapshotter testsuite: named subtests, each
// on a fresh guest, so one failure hides nothing else. A backend's test
// gives a Factory and calls Run; a new backend (one reached through a
// port-forward, say) does the same. The subtests:
//
//   - up_status_describe: Up, the description, the token, /healthz through
//     backend.Dialer, Status; Down leaves nothing (the backend's checks
//     too), and agentd no longer answers.
//   - screenshot_and_click: a screenshot and a click through agentd, seen by
//     an X event recorder where the backend is an XReacher, else as a
//     change on the screen.
//   - read_file: a file read back (FileReader), a missing one, refusals.
//   - named_open_list_down: a named guest is found by another process
//     (this test binary again), listed, taken down, and reported gone.
//   - down_twice: Down, then Down again, both succeed.
//   - vanished: a guest killed from outside reports not running and Down
//     succeeds.
package backendtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/xrecorder"
)

// Factory is what a backend's test knows that the suite cannot. Run calls
// nothing of it before a subtest starts, so a backend's prerequisites are
// checked (and its fakes made) in New, per subtest.
type Factory struct {
	// New returns the backend for one subtest, with whatever it needs made
	// fresh (a fake limactl), and the guest to start (the suite sets its
	// Name where it tests a named guest); it skips or fails the test
	// through internal/prereq when a prerequisite is missing.
	New func(t *testing.T) (backend.Backend, backend.Spec)
	// Timeout bounds each subtest (default 5 minutes).
	Timeout time.Duration
	// NoAgentd: the guest's agentd is a stand-in that answers /healthz
	// only (vm's fake), so screenshot_and_click is not run and agentd's
	// silence after Down is not checked.
	NoAgentd bool
	// Plant, if set, runs after Up: it puts ReadBack into the guest where
	// the backend cannot (a fake guest's file system).
	Plant func(t *testing.T, d backend.Description)
	// ReadBack is a file relative to the home that the guest has after Up,
	// and Want its content ("" with AnyContent: any non-empty content).
	ReadBack   string
	Want       string
	AnyContent bool
	// Left lists what the guest left behind after Down (processes,
	// containers, VMs, directories): the backend's own checks, beside the
	// suite's (the token file, the status).
	Left func(d backend.Description) []string
	// Vanish ends the guest from outside, as a crash or a person would
	// (its processes killed, its container or VM removed), and returns
	// once it is gone.
	Vanish func(t *testing.T, d backend.Description)
}

// The named subtest's other process is this test binary again, told by
// these variables what to open and where to report.
const (
	childName   = "AGENTD_BACKENDTEST_OPEN"
	childReport = "AGENTD_BACKENDTEST_REPORT"
)

// childResult is what the other process found.
type childResult struct {
	Description backend.Description
	Status      backend.Status
	Listed      []string
	Err         string
}

// Run runs the suite on the backend f makes.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if name := os.Getenv(childName); name != "" {
		openAsChild(t, name)
		return
	}
	if f.Timeout == 0 {
		f.Timeout = 5 * time.Minute
	}
	parent := t.Name()
	subtests := []struct {
		name string
		run  func(s *suite)
	}{
		{"up_status_describe", (*suite).upStatusDescribe},
		{"screenshot_and_click", (*suite).screenshotAndClick},
		{"read_file", (*suite).readFile},
		{"named_open_list_down", func(s *suite) { s.namedOpenListDown(parent) }},
		{"down_twice", (*suite).downTwice},
		{"vanished", (*suite).vanished},
	}
	for _, st := range subtests {
		if st.name == "screenshot_and_click" && f.NoAgentd {
			t.Logf("%s: not run: the guest's agentd is a stand-in", st.name)
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			// New may build what the backend needs (docker's image, once
			// per test binary): the subtest's own time starts after it.
			b, spec := f.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), f.Timeout)
			defer cancel()
			st.run(&suite{t: t, ctx: ctx, b: b, spec: spec, f: f})
		})
	}
}

// suite is one subtest's state.
type suite struct {
	t    *testing.T
	ctx  context.Context
	b    backend.Backend
	spec backend.Spec
	f    Factory
}

// up starts a fresh guest of spec; it is taken down when the test ends,
// whatever the subtest did.
func (s *suite) up(spec backend.Spec) backend.Instance {
	s.t.Helper()
	if err := s.b.Check(spec); err != nil {
		s.t.Fatalf("Check: %v", err)
	}
	spec.Progress = func(line string) { s.t.Logf("%s: %s", s.b.Name(), line) }
	var inst backend.Instance
	var err error
	if spec.Name != "" {
		inst, err = backend.Up(s.ctx, s.b, spec)
	} else {
		inst, err = s.b.Up(s.ctx, spec)
	}
	if err != nil {
		s.t.Fatalf("Up: %v", err)
	}
	s.t.Cleanup(func() {
		if err := inst.Down(context.Background()); err != nil {
			s.t.Errorf("Down at the end: %v", err)
		}
		_ = inst.Close()
	})
	s.t.Logf("up: %+v", inst.Describe())
	return inst
}

func (s *suite) upStatusDescribe() {
	t := s.t
	inst := s.up(s.spec)
	d := inst.Describe()
	_, dials := inst.(backend.AgentdDialer)
	if d.Backend != s.b.Name() || (d.Addr == "" && !dials) || d.TokenFile == "" || d.Owner == "" || d.Started.IsZero() {
		t.Errorf("description %+v: want the backend's name, an address (or DialAgentd), a token file, an owner and a start time", d)
	}
	readToken(t, d.TokenFile)
	if err := healthz.ProbeDial(s.ctx, backend.Dialer(inst)); err != nil {
		t.Fatalf("/healthz after Up: %v", err)
	}
	if st := inst.Status(s.ctx); !st.Running || st.Health != "ok" {
		t.Fatalf("Status after Up: %+v", st)
	}

	if err := inst.Down(s.ctx); err != nil {
		t.Fatalf("Down: %v", err)
	}
	if st := inst.Status(s.ctx); st.Running {
		t.Errorf("Status after Down: %+v, want not running", st)
	}
	if _, err := os.Stat(d.TokenFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token file left after Down: %v", err)
	}
	if err := healthz.ProbeDial(s.ctx, backend.Dialer(inst)); err == nil && !s.f.NoAgentd {
		t.Errorf("agentd of %s still answers after Down", d.Addr)
	}
	if s.f.Left != nil {
		if left := s.f.Left(d); len(left) > 0 {
			t.Errorf("left after Down: %v", left)
		}
	}
}

func (s *suite) screenshotAndClick() {
	t := s.t
	inst := s.up(s.spec)
	c, err := backend.Dial(s.ctx, inst)
	if err != nil {
		t.Fatalf("dial agentd: %v", err)
	}
	defer c.Close()
	before := screenshot(s.ctx, t, c)
	if w, h := before.Bounds().Dx(), before.Bounds().Dy(); s.spec.Width != 0 && (w != s.spec.Width || h != s.spec.Height) {
		t.Errorf("screenshot is %dx%d, the guest's screen %dx%d", w, h, s.spec.Width, s.spec.Height)
	}
	x, y := before.Bounds().Dx()/2, before.Bounds().Dy()/2

	if xr, ok := inst.(backend.XReacher); ok {
		// The recorder's window covers the screen: the click lands on it.
		t.Setenv("XAUTHORITY", xr.X().Xauthority)
		rec := xrecorder.Start(t, xr.X().Display)
		if res, err := c.Click(s.ctx, x, y, actions.Left); err != nil || !res.OK {
			t.Fatalf("click: %+v, %v", res, err)
		}
		rec.WaitFor(t, func(e xrecorder.Event) bool {
			return e.Kind == xrecorder.ButtonPress && e.X == x && e.Y == y
		}, 10*time.Second)
		return
	}
	// Without a way to the display, the click must show: a right click
	// on the desktop opens the window manager's menu.
	if res, err := c.Click(s.ctx, x, y, actions.Right); err != nil || !res.OK {
		t.Fatalf("click: %+v, %v", res, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for same(before, screenshot(s.ctx, t, c)) {
		if time.Now().After(deadline) {
			t.Fatal("the screen did not change within 10 s of a right click on the desktop")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func screenshot(ctx context.Context, t *testing.T, c *guest.Client) image.Image {
	t.Helper()
	shot, err := c.Screenshot(ctx)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		t.Fatalf("screenshot PNG: %v", err)
	}
	return img
}

// same reports whether two screenshots show the same pixels.
func same(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

func (s *suite) readFile() {
	t := s.t
	inst := s.up(s.spec)
	files, ok := inst.(backend.FileReader)
	if !ok {
		t.Fatalf("%T is not a backend.FileReader", inst)
	}
	if s.f.Plant != nil {
		s.f.Plant(t, inst.Describe())
	}
	got, err := files.ReadFile(s.ctx, s.f.ReadBack)
	switch {
	case err != nil:
		t.Errorf("ReadFile(%q): %v", s.f.ReadBack, err)
	case s.f.AnyContent && len(got) == 0, !s.f.AnyContent && string(got) != s.f.Want:
		t.Errorf("ReadFile(%q) = %q, want %q (any: %v)", s.f.ReadBack, got, s.f.Want, s.f.AnyContent)
	}
	if _, err := files.ReadFile(s.ctx, "no-such-file-"+s.b.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	for _, bad := range []string{"../outside", "/etc/passwd"} {
		if _, err := files.ReadFile(s.ctx, bad); err == nil || !strings.Contains(err.Error(), "inside the home") {
			t.Errorf("ReadFile(%q): %v, want a refusal", bad, err)
		}
	}
}

// namedOpenListDown starts a named guest, has another process find it by
// name as agentctl does (backend.Open), lists it, takes it down by name and
// checks that it is reported gone. parent is the top-level test, which the
// other process runs.
func (s *suite) namedOpenListDown(parent string) {
	t := s.t
	spec := s.spec
	spec.Name = "conformance-" + randhex.String(3)
	inst := s.up(spec)
	d := inst.Describe()

	report := filepath.Join(t.TempDir(), "child.json")
	top, _, _ := strings.Cut(parent, "/")
	cmd := exec.CommandContext(s.ctx, os.Args[0], "-test.run=^"+regexp.QuoteMeta(top)+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childName+"="+spec.Name, childReport+"="+report)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the other process's report: %v", err)
	}
	var got childResult
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Err != "" {
		t.Fatalf("the other process: %s", got.Err)
	}
	o := got.Description
	if o.Name != spec.Name || o.Backend != d.Backend || o.Addr != d.Addr || o.TokenFile != d.TokenFile || o.Instance != d.Instance {
		t.Errorf("the other process found %+v, want %+v", o, d)
	}
	if !got.Status.Running || got.Status.Health != "ok" {
		t.Errorf("the other process's Status: %+v", got.Status)
	}
	if !slices.Contains(got.Listed, spec.Name) {
		t.Errorf("the other process's List: %v, want %s in it", got.Listed, spec.Name)
	}
	if names, err := s.b.List(s.ctx); err != nil || !slices.Contains(names, spec.Name) {
		t.Errorf("List: %v, %v; want %s in it", names, err, spec.Name)
	}

	if running, err := backend.Down(s.ctx, spec.Name, false); err != nil || !running {
		t.Fatalf("Down by name: was running %v, %v", running, err)
	}
	if st := backend.StatusOf(s.ctx, spec.Name); st.Running {
		t.Errorf("status by name after Down: %+v, want not running", st)
	}
	if st := inst.Status(s.ctx); st.Running {
		t.Errorf("Status after Down: %+v, want not running", st)
	}
	if _, err := s.b.Open(s.ctx, spec.Name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after Down: %v, want fs.ErrNotExist", err)
	}
	if names, err := s.b.List(s.ctx); err != nil || slices.Contains(names, spec.Name) {
		t.Errorf("List after Down: %v, %v; want %s gone", names, err, spec.Name)
	}
}

// openAsChild is the other process of namedOpenListDown: it finds the
// named guest through the registered backends alone and reports.
func openAsChild(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var r childResult
	if inst, err := backend.Open(ctx, name); err != nil {
		r.Err = fmt.Sprintf("Open(%q): %v", name, err)
	} else {
		r.Description, r.Status = inst.Describe(), inst.Status(ctx)
		b, err := backend.Get(r.Description.Backend)
		if err == nil {
			r.Listed, err = b.List(ctx)
		}
		if err != nil {
			r.Err = err.Error()
		}
		_ = inst.Close()
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv(childReport), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) downTwice() {
	t := s.t
	inst := s.up(s.spec)
	if err := inst.Down(s.ctx); err != nil {
		t.Fatalf("Down: %v", err)
	}
	if err := inst.Down(s.ctx); err != nil {
		t.Errorf("second Down: %v", err)
	}
}

func (s *suite) vanished() {
	t := s.t
	if s.f.Vanish == nil {
		t.Fatal("the backend's test gives no Factory.Vanish")
	}
	inst := s.up(s.spec)
	d := inst.Describe()
	s.f.Vanish(t, d)
	// The backend may learn of it a moment later (a child's exit is
	// reaped on its own time).
	poll.For(t, 30*time.Second, "Status says the vanished guest is not running", func() (backend.Status, bool) {
		st := inst.Status(s.ctx)
		return st, !st.Running
	})
	if err := inst.Down(s.ctx); err != nil {
		t.Errorf("Down of a vanished guest: %v", err)
	}
	if s.f.Left != nil {
		if left := s.f.Left(d); len(left) > 0 {
			t.Errorf("left after Down of a vanished guest: %v", left)
		}
	}
}

func readToken(t *testing.T, file string) string {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("token file %s has mode %v: others can read it", file, fi.Mode().Perm())
	}
	data, err := os.ReadFile(file)
	if err != nil || len(bytes.TrimSpace(data)) < 32 {
		t.Fatalf("token %q: %v", data, err)
	}
	return strings.TrimSpace(string(data))
}
