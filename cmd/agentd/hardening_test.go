//go:build linux && cgo

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/hidepaths"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

// fdCount is how many file descriptors process pid holds.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestIdleConnectionsTimeout: connections that never authenticate — idle
// keep-alive connections after a request, a header sent halfway, nothing
// sent at all — are closed by agentd after --idle-timeout, and its file
// descriptors return to what they were; a websocket session idle for longer
// is not cut.
func TestIdleConnectionsTimeout(t *testing.T) {
	bin := agentdtest.Binary(t)
	x := xvfbtest.Start(t, 640, 480)
	d := startAgentd(t, bin, x.Display, writeToken(t, testToken, 0o600), "--idle-timeout", "1s")
	pid := d.cmd.Process.Pid
	session, err := guest.Dial(ctx10(t), d.addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if _, err := session.Screenshot(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	baseline := fdCount(t, pid)

	const n = 300
	type held struct {
		kind string
		conn net.Conn
		r    io.Reader
	}
	conns := make([]held, 0, n)
	for i := range n {
		c, err := net.DialTimeout("tcp", d.addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		h := held{conn: c, r: c}
		switch i % 3 {
		case 0:
			h.kind = "keep-alive after a request"
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: agentd\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Close {
				t.Fatalf("connection %d: agentd did not keep the connection alive", i)
			}
			h.r = br
		case 1:
			h.kind = "half a header"
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: agentd\r\nX-Slow:"); err != nil {
				t.Fatal(err)
			}
		default:
			h.kind = "nothing sent"
		}
		conns = append(conns, h)
	}
	// Each is held (the test would pass trivially otherwise)...
	if got := fdCount(t, pid); got < baseline+n/2 {
		t.Fatalf("agentd holds %d file descriptors with %d connections open, %d before", got, n, baseline)
	}
	// ...until agentd closes it: a read sees the end, not the test's deadline.
	for i, h := range conns {
		_ = h.conn.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := io.Copy(io.Discard, h.r)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d (%s) still open after a minute", i, h.kind)
		}
		h.conn.Close()
	}
	deadline := time.Now().Add(time.Minute)
	for fdCount(t, pid) > baseline {
		if time.Now().After(deadline) {
			t.Fatalf("agentd holds %d file descriptors, %d before the connections", fdCount(t, pid), baseline)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The session was idle all along, longer than the timeout.
	if _, err := session.Screenshot(ctx10(t)); err != nil {
		t.Fatalf("the websocket session after idling: %v", err)
	}
}

// TestAppCannotReadTheToken: a program started as the guest starts its
// desktop applications (`agentd app --hide DIR`) cannot read, list or write
// in agentd's private directory, nor do it through a program it starts
// itself, while the rest of the file system stays as it was.
func TestAppCannotReadTheToken(t *testing.T) {
	bin := agentdtest.Binary(t)
	if _, err := hidepaths.ABI(); err != nil {
		prereq.Missing(t, prereq.X, "Landlock in this kernel (the guest starts its applications under it): %v", err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(run, "token")
	if err := os.WriteFile(tokenFile, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	note := filepath.Join(dir, "note")
	if err := os.WriteFile(note, []byte("a note"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`cat %[1]s/token; ls %[1]s; echo x >%[1]s/planted; sh -c 'cat %[1]s/token'; cat %[2]s; echo; echo done`, run, note)
	out, err := exec.Command(bin, "app", "--hide", run, "--", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("agentd app: %v\n%s", err, out)
	}
	got := string(out)
	if strings.Contains(got, testToken) {
		t.Fatalf("the application read the token:\n%s", got)
	}
	if strings.Count(got, "Permission denied") != 4 || !strings.Contains(got, "a note\ndone\n") {
		t.Fatalf("want four refusals and the note read:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(run, "planted")); err == nil {
		t.Fatal("the application wrote into the hidden directory")
	}

	for _, args := range [][]string{{"app", "--", "true"}, {"app", "--hide", run}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "want --hide and a program") {
			t.Errorf("agentd %v: %v\n%s", args, err, out)
		}
	}
}
