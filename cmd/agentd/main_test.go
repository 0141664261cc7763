//go:build linux && cgo

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

const testToken = "main-test-token-0123456789abcdef"

func writeToken(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// envWithout is the environment without the token variable, so only what
// a test passes reaches agentd.
func envWithout() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTD_TOKEN=") {
			env = append(env, kv)
		}
	}
	return env
}

// TestRefusedConfigurations: agentd refuses to start where it would expose
// the keyboard, with a message that says what to change, and never prints
// the token. The display does not exist: a configuration that got past the
// checks would fail with another message.
func TestRefusedConfigurations(t *testing.T) {
	bin := agentdtest.Binary(t)
	good := writeToken(t, testToken, 0o600)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"all interfaces", []string{"--listen", "0.0.0.0:0", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, v6", []string{"--listen", "[::]:7010", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, ::0", []string{"--listen", "[::0]:7010", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, 0::", []string{"--listen", "[0::]:7010", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, eight zeros", []string{"--listen", "[0:0:0:0:0:0:0:0]:7010", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, v4-mapped", []string{"--listen", "[::ffff:0.0.0.0]:7010", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, with a zone", []string{"--listen", "[::%lo]:7010", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, empty host", []string{"--listen", ":7010", "--token-file", good}, "refusing to listen on all interfaces"},
		{"all interfaces, inet_aton's 0", []string{"--listen", "0:7010", "--token-file", good}, "host must be an IP address"},
		{"a host name", []string{"--listen", "example.org:7010", "--token-file", good}, "host must be an IP address"},
		{"non-loopback without a token", []string{"--listen", "10.1.2.3:7010"}, "no token"},
		{"token file readable by others", []string{"--token-file", writeToken(t, testToken, 0o644)}, "readable by group or others"},
		{"token file readable by group", []string{"--token-file", writeToken(t, testToken, 0o640)}, "chmod 600"},
		{"short token", []string{"--token-file", writeToken(t, "short", 0o600)}, "shorter than 16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"--display", ":424242"}, c.args...)...)
			cmd.Env = envWithout()
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("agentd %v: %v, want exit status 1\n%s", c.args, err, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("agentd %v said %q, want %q", c.args, out, c.want)
			}
			if strings.Contains(string(out), testToken) {
				t.Fatalf("agentd printed the token: %s", out)
			}
		})
	}
}

// daemon is a running agentd process.
type daemon struct {
	cmd    *exec.Cmd
	addr   string
	stderr *agentdtest.SyncBuffer
	exited chan struct{}
}

func startAgentd(t *testing.T, bin, display, tokenFile string, extra ...string) *daemon {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	d := &daemon{stderr: &agentdtest.SyncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(bin, append([]string{"--display", display, "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--addr-file", addrFile}, extra...)...)
	d.cmd.Env = envWithout()
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.exited
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			d.addr = strings.TrimSpace(string(b))
			return d
		}
		select {
		case <-d.exited:
			t.Fatalf("agentd exited at start:\n%s", d.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentd did not write its address:\n%s", d.stderr)
		}
	}
}

// restartDisplay is a recorded Xvfb on which a test starts agentd, kills
// it and starts the next one, each with the test token.
type restartDisplay struct {
	t                    *testing.T
	bin, name, tokenFile string
	rec                  *xrecorder.Recorder
}

func newRestartDisplay(t *testing.T) *restartDisplay {
	x := xvfbtest.Start(t, 1024, 768)
	return &restartDisplay{t: t, bin: agentdtest.Binary(t), name: x.Display, tokenFile: writeToken(t, testToken, 0o600), rec: xrecorder.Start(t, x.Display)}
}

func (x *restartDisplay) start() *daemon {
	x.t.Helper()
	return startAgentd(x.t, x.bin, x.name, x.tokenFile)
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestKilledMidBatch: agentd is killed (SIGKILL) while a batch types. The
// client's error says which actions completed and which may have run;
// nothing stays pressed; a new agentd on the same display accepts a new
// session. Neither agentd logs the token, refusals included.
func TestKilledMidBatch(t *testing.T) {
	x := newRestartDisplay(t)
	rec := x.rec
	first := x.start()

	if _, err := guest.Dial(ctx10(t), first.addr, testToken[:len(testToken)-1]+"X"); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	c, err := guest.Dial(ctx10(t), first.addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	progress := make(chan wire.ActionResult, 3)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Batch(context.Background(), []actions.Action{
			{Type: actions.Click, X: 100, Y: 100},
			{Type: actions.TypeText, Text: strings.Repeat("Killed Mid Batch. ", 300)},
			{Type: actions.Click, X: 200, Y: 200},
		}, func(r wire.ActionResult) { progress <- r })
		errc <- err
	}()
	if r := <-progress; r.Index != 0 || !r.OK {
		t.Fatalf("first progress %+v", r)
	}
	rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return len(xrecorder.Typed(evs)) >= 10 }, 10*time.Second)
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err = <-errc
	var lost *guest.ConnectionLostError
	if !errors.As(err, &lost) || len(lost.Completed) != 1 || lost.Completed[0].Type != "click" || lost.InFlight != 1 {
		t.Fatalf("batch error = %v (%+v)", err, lost)
	}
	if msg := err.Error(); !strings.Contains(msg, "after 1 completed action(s)") || !strings.Contains(msg, "action 1 may or may not have run") {
		t.Fatalf("the error does not say what ran: %v", err)
	}
	<-first.exited
	// Each character's press and release reach the server in one flush,
	// so a kill between characters leaves no key down.
	rec.Sync(t)
	if keys, mask := rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
		t.Fatalf("left pressed by the killed agentd: keys %v mask %#x", keys, mask)
	}

	second := x.start()
	c2, err := guest.Dial(ctx10(t), second.addr, testToken)
	if err != nil {
		t.Fatalf("new agentd: %v", err)
	}
	defer c2.Close()
	rec.Clear()
	if _, err := c2.Click(ctx10(t), 300, 300, actions.Right); err != nil {
		t.Fatal(err)
	}
	ev := rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonRelease }, 5*time.Second)
	if ev.X != 300 || ev.Y != 300 || ev.Button != 3 {
		t.Fatalf("click on the new agentd arrived as %v", ev)
	}
	if _, err := c2.Screenshot(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	for i, d := range []*daemon{first, second} {
		if log := d.stderr.String(); strings.Contains(log, testToken) || strings.Contains(log, testToken[:16]) {
			t.Fatalf("agentd %d logged the token:\n%s", i+1, log)
		}
	}
	if !strings.Contains(first.stderr.String(), "wrong token") {
		t.Fatalf("the refusal was not logged:\n%s", first.stderr)
	}
}

// TestKilledMidDragNewAgentdReleases: agentd is killed while a drag holds
// shift and the left button. The X server keeps XTEST presses of a client
// that is gone, so they stay down until the next agentd starts: it
// releases what is down on its display before serving.
func TestKilledMidDragNewAgentdReleases(t *testing.T) {
	x := newRestartDisplay(t)
	rec := x.rec
	first := x.start()
	c, err := guest.Dial(ctx10(t), first.addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := make([]actions.Point, actions.MaxPathLen)
	for i := range path {
		path[i] = actions.Point{X: 10 + (i%2)*1000, Y: 10 + (i%2)*740}
	}
	dragged := make(chan error, 1)
	go func() { _, err := c.Drag(context.Background(), path, "shift"); dragged <- err }()
	press := rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.ButtonPress && e.Button == 1 }, 10*time.Second)
	if press.State&xrecorder.ShiftMask == 0 {
		t.Fatalf("drag pressed without shift: %v", press)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	if err := <-dragged; !errors.Is(err, guest.ErrClosed) {
		t.Fatalf("drag on a killed agentd: %v, want a lost connection", err)
	}
	rec.Sync(t)
	if keys, mask := rec.Down(t); len(keys) == 0 || mask&xrecorder.Button1Mask == 0 {
		t.Fatalf("the kill left keys %v mask %#x: want shift and the button still down (the drag was not interrupted?)", keys, mask)
	}

	second := x.start()
	rec.Sync(t)
	if keys, mask := rec.Down(t); len(keys) != 0 || mask&0xff != 0 || mask&xrecorder.Button1Mask != 0 {
		t.Fatalf("still pressed once the new agentd runs: keys %v mask %#x", keys, mask)
	}
	c2, err := guest.Dial(ctx10(t), second.addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	rec.Clear()
	if _, err := c2.Type(ctx10(t), "ab"); err != nil {
		t.Fatal(err)
	}
	rec.WaitTyped(t, "ab", 5*time.Second)
}
