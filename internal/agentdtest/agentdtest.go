// Package agentdtest helps tests that run the real agentd binary: where to
// find it, starting it until it listens, a buffer its output can be
// written to while a test reads, dialling it (or an agentd server in the
// test) as its controller, and the longest drag it takes.
package agentdtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/syncbuf"
)

// Binary returns $AGENTD_BIN/agentd when AGENTD_BIN is set (make test
// builds it), else builds the real agentd (cgo, X11) into a temporary
// directory of the test. Every test that runs agentd finds it here. A build
// that fails (no C compiler or X11 headers) ends the test as a missing
// prerequisite of kind prereq.X: a failure wherever X is required.
func Binary(t testing.TB) string {
	t.Helper()
	return program(t, "agentd", t.TempDir())
}

// BinaryWithBenchProbe is Binary with agentd-bench-probe next to it, where
// `agentctl bench` looks for it.
func BinaryWithBenchProbe(t testing.TB) string {
	t.Helper()
	p := Binary(t)
	program(t, "agentd-bench-probe", filepath.Dir(p))
	return p
}

// program finds $AGENTD_BIN/name, or builds cmd/name into dir.
func program(t testing.TB, name, dir string) string {
	t.Helper()
	if bin := os.Getenv("AGENTD_BIN"); bin != "" {
		p, err := filepath.Abs(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("AGENTD_BIN is set but has no %s: %v", name, err)
		}
		return p
	}
	p := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", p, "github.com/agentd-dev/agentd/cmd/"+name)
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		prereq.Missing(t, prereq.X, "build %s (cgo, X11 headers: make deps): %v\n%s", name, err, out)
	}
	return p
}

// Dial connects a controller to the agentd at addr with token; it is
// closed when the test ends. The dial may take 30 s: under load an agentd
// that has just started can be slow to answer.
func Dial(t testing.TB, addr, token string) *guest.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := guest.Dial(ctx, addr, token)
	if err != nil {
		t.Fatalf("dial agentd at %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// SyncBuffer is a bytes.Buffer that a process's output and the test can
// share.
type SyncBuffer = syncbuf.Buffer

// Start starts cmd, an agentd told to write its address to addrFile
// (--addr-file), and returns that address once agentd listens, and agentd's
// output. It fails the test if agentd ends first or does not listen within
// timeout. When the test ends agentd is stopped (SIGINT, killed after 10 s)
// and, if the test failed, its output is logged.
func Start(t testing.TB, cmd *exec.Cmd, addrFile string, timeout time.Duration) (string, *SyncBuffer) {
	t.Helper()
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agentd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("agentd output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(timeout)
	for {
		// agentd writes the file atomically, its line ending in a newline.
		if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b)), out
		}
		select {
		case <-exited:
			t.Fatalf("agentd exited at start:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentd did not listen within %s:\n%s", timeout, out.String())
		}
	}
}

// LongDragPath is the JSON path of the longest drag a request may carry
// (actions.MaxPathLen points, 32 motion events a leg): back and forth
// between (10,10) and (x,y), ending at (x,10), a corner no earlier leg
// passes through, so a test can tell a drag cut short from one that ran.
func LongDragPath(x, y int) string {
	far := `{"x":` + strconv.Itoa(x) + `,"y":` + strconv.Itoa(y) + `}`
	var path strings.Builder
	path.WriteString("[")
	for i := range actions.MaxPathLen - 1 {
		if i%2 == 0 {
			path.WriteString(`{"x":10,"y":10},`)
		} else {
			path.WriteString(far + ",")
		}
	}
	path.WriteString(`{"x":` + strconv.Itoa(x) + `,"y":10}]`)
	return path.String()
}
