// Package backendtest is the conformance suite every guest backend passes
// (containerd's testsuite style): the same steps, run by each backend's
// tests against the real thing where it can (local on Xvfb, docker on an
// engine) and against a stand-in elsewhere (vm's fake limactl):
// up → healthy → a screenshot and a click through agentd → status → a file
// read back → down, and down leaves nothing behind.
package backendtest

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
)

// Options are what a backend's test knows that the suite cannot.
type Options struct {
	// Spec is the guest to start; without a name, a guest of the test.
	Spec backend.Spec
	// Timeout bounds the whole run (default 5 minutes).
	Timeout time.Duration
	// NoAgentd: the guest's agentd is a stand-in that answers /healthz
	// only (vm's fake), so no screenshot or click is taken.
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
}

// Run runs the suite on b.
func Run(t *testing.T, b backend.Backend, o Options) {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	if err := b.Check(o.Spec); err != nil {
		t.Fatalf("Check: %v", err)
	}
	o.Spec.Progress = func(line string) { t.Logf("%s: %s", b.Name(), line) }
	inst, err := b.Up(ctx, o.Spec)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = inst.Down(context.Background())
		}
	})
	d := inst.Describe()
	t.Logf("up: %+v", d)

	// Up → healthy.
	if d.Backend != b.Name() || d.Addr == "" || d.TokenFile == "" || d.Owner == "" {
		t.Fatalf("description %+v: want the backend's name, an address, a token file and an owner", d)
	}
	token := readToken(t, d.TokenFile)
	if err := healthz.Probe(ctx, d.Addr); err != nil {
		t.Fatalf("/healthz after Up: %v", err)
	}
	if st := inst.Status(ctx); !st.Running || st.Health != "ok" {
		t.Fatalf("Status after Up: %+v", st)
	}

	// A screenshot and a click through agentd.
	if !o.NoAgentd {
		screenshotAndClick(ctx, t, d, token, o.Spec)
	}

	// A file read back.
	files, ok := inst.(backend.FileReader)
	if !ok {
		t.Fatalf("%T is not a backend.FileReader", inst)
	}
	if o.Plant != nil {
		o.Plant(t, d)
	}
	got, err := files.ReadFile(ctx, o.ReadBack)
	switch {
	case err != nil:
		t.Errorf("ReadFile(%q): %v", o.ReadBack, err)
	case o.AnyContent && len(got) == 0, !o.AnyContent && string(got) != o.Want:
		t.Errorf("ReadFile(%q) = %q, want %q (any: %v)", o.ReadBack, got, o.Want, o.AnyContent)
	}
	if _, err := files.ReadFile(ctx, "no-such-file-"+b.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	for _, bad := range []string{"../outside", "/etc/passwd"} {
		if _, err := files.ReadFile(ctx, bad); err == nil || !strings.Contains(err.Error(), "inside the home") {
			t.Errorf("ReadFile(%q): %v, want a refusal", bad, err)
		}
	}

	// Down leaves nothing.
	if err := inst.Down(ctx); err != nil {
		t.Fatalf("Down: %v", err)
	}
	downed = true
	if err := inst.Down(ctx); err != nil {
		t.Errorf("second Down: %v", err)
	}
	if _, err := os.Stat(d.TokenFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token file left after Down: %v", err)
	}
	if err := healthz.Probe(ctx, d.Addr); err == nil && !o.NoAgentd {
		t.Errorf("agentd at %s still answers after Down", d.Addr)
	}
	if o.Left != nil {
		if left := o.Left(d); len(left) > 0 {
			t.Errorf("left after Down: %v", left)
		}
	}
	_ = inst.Close()
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

func screenshotAndClick(ctx context.Context, t *testing.T, d backend.Description, token string, spec backend.Spec) {
	t.Helper()
	c, err := guest.Dial(ctx, d.Addr, token)
	if err != nil {
		t.Fatalf("dial agentd: %v", err)
	}
	defer c.Close()
	shot, err := c.Screenshot(ctx)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		t.Fatalf("screenshot PNG: %v", err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); spec.Width != 0 && (w != spec.Width || h != spec.Height) {
		t.Errorf("screenshot is %dx%d, the guest's screen %dx%d", w, h, spec.Width, spec.Height)
	}
	res, err := c.Click(ctx, img.Bounds().Dx()/2, img.Bounds().Dy()/2, actions.Left)
	if err != nil || !res.OK {
		t.Fatalf("click: %+v, %v", res, err)
	}
}
