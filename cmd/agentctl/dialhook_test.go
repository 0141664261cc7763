//go:build linux

package main

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/desktoptest"
	"github.com/agentd-dev/agentd/internal/healthz"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xrecorder"
)

// tunnelBackend is a backend whose guests' agentd is reached only through
// DialAgentd, as a guest behind a port-forward is: the address it
// describes leads nowhere.
type tunnelBackend struct{}

// tunnel is the one guest the test's tunnelBackend serves.
var tunnel struct {
	sync.Mutex
	agentd    string // the real agentd's address, known only to DialAgentd
	tokenFile string
	dials     atomic.Int64
}

var registerTunnel sync.Once

func (tunnelBackend) Name() string                           { return "tunnel-test" }
func (tunnelBackend) Check(backend.Spec) error               { return nil }
func (tunnelBackend) List(context.Context) ([]string, error) { return backend.NamedOn("tunnel-test") }
func (b tunnelBackend) Up(_ context.Context, spec backend.Spec) (backend.Instance, error) {
	return b.Open(context.Background(), spec.Name)
}
func (tunnelBackend) Open(_ context.Context, name string) (backend.Instance, error) {
	tunnel.Lock()
	defer tunnel.Unlock()
	if tunnel.agentd == "" {
		return nil, fs.ErrNotExist
	}
	return &tunneled{desc: backend.Description{Name: name, Backend: "tunnel-test", Owner: "the test",
		Addr: "unix:/nonexistent/agentd.sock", TokenFile: tunnel.tokenFile, Apps: "none"}}, nil
}

type tunneled struct{ desc backend.Description }

func (i *tunneled) Describe() backend.Description { return i.desc }
func (i *tunneled) Status(ctx context.Context) backend.Status {
	return backend.Status{Running: true, Health: healthz.Describe(healthz.ProbeDial(ctx, i.DialAgentd))}
}
func (i *tunneled) Down(context.Context) error { return nil }
func (i *tunneled) Close() error               { return nil }

// DialAgentd counts the connections and makes each to the real agentd.
func (i *tunneled) DialAgentd(ctx context.Context) (net.Conn, error) {
	tunnel.dials.Add(1)
	tunnel.Lock()
	addr := tunnel.agentd
	tunnel.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// TestCommandsReachAgentdThroughTheDialHook: a named guest of a backend
// that reaches agentd only through DialAgentd is driven by agentctl's
// commands (screenshot, act, the console's live view) by its name: every connection goes through the hook, and the click
// lands on the desktop.
func TestCommandsReachAgentdThroughTheDialHook(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb")
	registerTunnel.Do(func() { backend.Register(tunnelBackend{}) })
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())

	d := desktoptest.Start(t, agentdtest.Binary(t), 640, 400, crashToken, 20*time.Second)
	addr, rec := d.Addr, d.Rec
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(crashToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tunnel.Lock()
	tunnel.agentd, tunnel.tokenFile = addr, tokenFile
	tunnel.Unlock()
	t.Cleanup(func() {
		tunnel.Lock()
		tunnel.agentd = ""
		tunnel.Unlock()
	})
	t.Setenv("AGENTD_TOKEN_FILE", "")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := backend.Up(ctx, tunnelBackend{}, backend.Spec{Name: "tunneled"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = backend.Down(context.Background(), "tunneled", false) })
	inst.Close()

	// The stored address leads nowhere: only the hook reaches agentd.
	if err := healthz.Probe(ctx, inst.Describe().Addr); err == nil {
		t.Fatal("the described address answers: the test would not tell the hook from it")
	}
	used := func(what string, f func() error) {
		t.Helper()
		before := tunnel.dials.Load()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if tunnel.dials.Load() == before {
			t.Fatalf("%s reached agentd without DialAgentd", what)
		}
	}
	used("agentctl screenshot --guest tunneled", func() error {
		return runScreenshot(ctx, []string{"--guest", "tunneled", "-o", filepath.Join(t.TempDir(), "shot.png")})
	})
	rec.Clear()
	used("agentctl act --guest tunneled", func() error {
		return runAct(ctx, []string{"--guest", "tunneled", `{"type":"click","x":200,"y":150}`})
	})
	rec.Sync(t)
	clicked := false
	for _, e := range rec.Events() {
		clicked = clicked || (e.Kind == xrecorder.ButtonPress && e.X == 200 && e.Y == 150)
	}
	if !clicked {
		t.Fatalf("the click did not reach the desktop: %v", rec.Events())
	}
	used("the console's live view of --guest tunneled", func() error {
		g := guestFlags{addr: "tunneled"}
		cg, err := consoleGuest(ctx, &g)
		if err != nil {
			return err
		}
		w, err := guest.Watch(ctx, cg.Addr, cg.Token, guest.WatchOptions{Dial: cg.Dial})
		if err != nil {
			return err
		}
		defer w.Close()
		_, err = w.Next(ctx)
		return err
	})
}
