package local

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

// A guest's teardown removes the X socket its Xvfb left, but never one a
// live server answers on: with -displayfd no X server keeps a lock file,
// and another desktop (a parallel eval trial, a test's Xvfb) may take the
// display number the moment the guest's Xvfb exits. Removing its socket
// cut that desktop off (seen in CI: "dial unix /tmp/.X11-unix/X0: no such
// file or directory").
func TestRemoveXFilesSparesALiveServer(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb")
	x := xvfbtest.Start(t, 64, 64)
	n := 0
	if _, err := fmt.Sscanf(x.Display, ":%d", &n); err != nil {
		t.Fatal(err)
	}
	const gone = 1 << 22 // above pid_max's default: a server that exited
	if err := removeXFiles(n, gone); err != nil {
		t.Fatal(err)
	}
	sock := "/tmp/.X11-unix/X" + strings.TrimPrefix(x.Display, ":")
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("the live server's socket went with the teardown: %v", err)
	}
	c.Close()
}

// A socket nobody answers on is the exited server's: it goes.
func TestRemoveXFilesRemovesAStaleSocket(t *testing.T) {
	if err := os.MkdirAll("/tmp/.X11-unix", 0o1777); err != nil {
		t.Fatal(err)
	}
	var n int
	var sock string
	var l *net.UnixListener
	for range 100 { // a display number no server uses
		n = 7000 + rand.IntN(1000)
		sock = fmt.Sprintf("/tmp/.X11-unix/X%d", n)
		var err error
		if l, err = net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"}); err == nil {
			break
		}
	}
	if l == nil {
		t.Fatal("no free display number for a stale socket")
	}
	l.SetUnlinkOnClose(false) // as a SIGKILLed Xvfb leaves it
	l.Close()
	t.Cleanup(func() { os.Remove(sock) })
	if err := removeXFiles(n, 1<<22); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the stale socket %s is still there (stat: %v)", sock, err)
	}
}
