// Package desktoptest starts a real agentd on a private Xvfb whose screen an
// X event recorder covers: the rig of the tests that check what reaches the
// desktop (clicks, typed text, paint a screenshot must show).
package desktoptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

// Desktop is a started agentd and the recorder on its screen.
type Desktop struct {
	Addr string
	Rec  *xrecorder.Recorder
	// Pid is agentd's process.
	Pid int
}

// Start starts agentd (bin, from agentdtest.Binary: a test starting
// several builds it once) with token on a width×height Xvfb, with args
// added to its command line, and waits up to ready for it to listen
// (agentd --browser starts Chromium first, which takes longer). All of it
// is stopped when the test ends.
func Start(t testing.TB, bin string, width, height int, token string, ready time.Duration, args ...string) *Desktop {
	t.Helper()
	x := xvfbtest.Start(t, width, height)
	rec := xrecorder.Start(t, x.Display)
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(bin, append([]string{"--display", x.Display, "--listen", "127.0.0.1:0", "--addr-file", addrFile}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTD_TOKEN="+token)
	addr, _ := agentdtest.Start(t, cmd, addrFile, ready)
	return &Desktop{Addr: addr, Rec: rec, Pid: cmd.Process.Pid}
}
