//go:build linux

package codeexec_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

const testToken = "codeexec-test-token-0123456789abcdef"

// desk is the real agentd binary with --code on a private Xvfb, an event
// recorder covering the screen, and a client.
type desk struct {
	x      *xvfbtest.Server
	rec    *xrecorder.Recorder
	client *guest.Client
	log    *agentdtest.SyncBuffer
	pid    int // agentd's
	addr   string
}

// requirePIL skips (or, under AGENTD_REQUIRE_X, fails) without Debian's
// python3 and python3-pil.
func requirePIL(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-I", "-c", "import PIL.Image").Run(); err != nil {
		prereq.Missing(t, prereq.X, "code execution needs /usr/bin/python3 with PIL (apt-get install python3 python3-pil): %v", err)
	}
}

// startAgentd runs agentd on a w×h Xvfb with args added. The token comes
// through the environment, so a worker that inherited agentd's would see it.
func startAgentd(t *testing.T, w, h int, args ...string) *desk {
	t.Helper()
	return startAgentdAs(t, w, h, false, args...)
}

// startAgentdAs is startAgentd; with asUser, a test running as root runs
// agentd as nobody: root reads every process's /proc files, so only an
// agentd of a plain user shows what its workers cannot read.
func startAgentdAs(t *testing.T, w, h int, asUser bool, args ...string) *desk {
	t.Helper()
	return startAgentdFull(t, w, h, asUser, nil, args...)
}

// startAgentdEnv is startAgentd with env added to agentd's environment.
func startAgentdEnv(t *testing.T, w, h int, env []string, args ...string) *desk {
	t.Helper()
	return startAgentdFull(t, w, h, false, env, args...)
}

func startAgentdFull(t *testing.T, w, h int, asUser bool, env []string, args ...string) *desk {
	t.Helper()
	bin := agentdtest.Binary(t)
	x := xvfbtest.Start(t, w, h)
	rec := xrecorder.Start(t, x.Display)
	dir := t.TempDir()
	var cred *syscall.Credential
	if asUser && os.Geteuid() == 0 {
		bin, dir = forNobody(t, bin)
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(bin, append([]string{"--display", x.Display, "--listen", "127.0.0.1:0", "--addr-file", addrFile}, args...)...)
	cmd.Env = append(append(os.Environ(), "AGENTD_TOKEN="+testToken), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	addr, logs := agentdtest.Start(t, cmd, addrFile, 20*time.Second)
	c := agentdtest.Dial(t, addr, testToken)
	return &desk{x: x, rec: rec, client: c, log: logs, pid: cmd.Process.Pid, addr: addr}
}

const nobody = 65534

// forNobody copies agentd where nobody may run it and returns it and a
// directory nobody may write to.
func forNobody(t *testing.T, bin string) (string, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentd-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(bin)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "agentd"), b, 0o755)
	}
	if err == nil {
		err = errors.Join(os.Chmod(dir, 0o755), os.Mkdir(filepath.Join(dir, "run"), 0o700), os.Chown(filepath.Join(dir, "run"), nobody, nobody))
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "agentd"), filepath.Join(dir, "run")
}

func newDesk(t *testing.T) *desk {
	t.Helper()
	requirePIL(t)
	return startAgentd(t, 1440, 900, "--code")
}

// run execs code and fails the test on a request error or a traceback.
func (d *desk) run(t *testing.T, code string) wire.ExecResult {
	t.Helper()
	res := d.exec(t, code, 0)
	if res.Traceback != "" {
		t.Fatalf("code raised:\n%s\noutput: %s", res.Traceback, res.Output)
	}
	return res
}

func (d *desk) exec(t *testing.T, code string, deadline time.Duration) wire.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := d.client.Exec(ctx, code, deadline)
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	return res
}

func TestNamespacePersistsAcrossCalls(t *testing.T) {
	d := newDesk(t)
	res := d.run(t, "x = 41\ndef inc(v):\n    return v + 1\nprint('defined')")
	if !res.FreshNamespace || res.NamespaceLost || res.Output != "defined\n" {
		t.Fatalf("first call: %+v", res)
	}
	res = d.run(t, "log(inc(x), 'é')")
	if res.FreshNamespace || res.Output != "42 é\n" {
		t.Fatalf("second call: %+v", res)
	}
	res = d.exec(t, "print('before')\n1/0", 0)
	if !strings.Contains(res.Traceback, "ZeroDivisionError") || !strings.Contains(res.Traceback, "1/0") || res.Output != "before\n" || res.NamespaceLost {
		t.Fatalf("exception: %+v", res)
	}
	if res := d.run(t, "print(x)"); res.Output != "41\n" {
		t.Fatalf("after an exception the namespace must survive: %+v", res)
	}
}
