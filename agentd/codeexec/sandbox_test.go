//go:build linux

package codeexec_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/codeexec"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/local"
)

// vmHWM is a process's peak resident set, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestSandboxOversizedFrames: the model's code writes frames of its own to
// the worker's pipe. A header declaring a 2 GiB payload, and a 255 MiB
// payload on a frame that carries none, each stop the worker with an error
// that says so; agentd never holds what they declare (its peak RSS stays
// within 64 MiB of where it was).
func TestSandboxOversizedFrames(t *testing.T) {
	d := newDesk(t)
	d.run(t, "import os, struct\nprint(pyautogui.size())")
	before := vmHWM(t, d.pid)
	for _, c := range []struct{ name, code string }{
		{"a 2 GiB image header", `
h = b'{"op":"image","format":"png"}'
os.write(4, struct.pack('>II', len(h), 1 << 31) + h)
os.write(4, b'\0' * (1 << 20))
time.sleep(60)`},
		{"255 MiB of payload on printed text", `
h = b'{"op":"out","text":""}'
os.write(4, struct.pack('>II', len(h), 255 << 20) + h)
blob = b' ' * (1 << 20)
for i in range(255):
    os.write(4, blob)
print('written')`},
	} {
		res := d.exec(t, "import os, struct, time\n"+c.code, 0)
		if !res.NamespaceLost || !strings.Contains(res.Output, "agentd takes at most") || strings.Contains(res.Output, "written") {
			t.Errorf("%s: %+v", c.name, res)
		}
		if grew := vmHWM(t, d.pid) - before; grew > 64<<20 {
			t.Errorf("%s: agentd's peak RSS grew by %d MiB", c.name, grew>>20)
		}
	}
	if res := d.run(t, "print('fresh')"); !res.FreshNamespace || res.Output != "fresh\n" {
		t.Fatalf("after the oversized frames: %+v", res)
	}
}

// TestSandboxLargePrintTruncated: one print of 1 MiB is cut at the output
// cap, and the worker and its namespace live on.
func TestSandboxLargePrintTruncated(t *testing.T) {
	d := newDesk(t)
	res := d.run(t, "kept = 1\nprint('x' * (1 << 20))\nprint('\\x01' * (1 << 16))")
	if res.NamespaceLost || !res.OutputTruncated || !strings.HasPrefix(res.Output, "xxxx") ||
		!strings.Contains(res.Output, "[output truncated: at most 65536 bytes per call]") || len(res.Output) > 66000 {
		t.Fatalf("a 1 MiB print: lost %v truncated %v, %d bytes", res.NamespaceLost, res.OutputTruncated, len(res.Output))
	}
	res = d.exec(t, "print(kept)\nraise ValueError('y' * (1 << 20))", 0)
	if res.NamespaceLost || res.FreshNamespace || res.Output != "1\n" || !strings.Contains(res.Traceback, "traceback cut") ||
		!strings.HasSuffix(strings.TrimSpace(res.Traceback), "yyyy") {
		t.Fatalf("after a 1 MiB print and a 1 MiB exception: %+v", res.Output)
	}
	res = d.exec(t, "from PIL import Image\ndisplay(Image.new('RGB', (5000, 5000)))", 0)
	if res.NamespaceLost || !strings.Contains(res.Traceback, "display() takes images of at most 16777216 pixels") {
		t.Fatalf("display() of a 5000×5000 image: %+v", res)
	}
}

// TestSandboxXServerRefused: the model's code, speaking X itself over the
// server's socket (by path and by abstract name), is refused before a byte
// reaches the server: the recorder sees no pointer move. The X cookie
// agentd has (XAUTHORITY) is closed to it too.
func TestSandboxXServerRefused(t *testing.T) {
	requirePIL(t)
	cookie := filepath.Join(t.TempDir(), "Xauthority")
	if err := os.WriteFile(cookie, []byte("not-a-real-cookie"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startAgentdEnv(t, 640, 480, []string{"XAUTHORITY=" + cookie}, "--code")
	d.run(t, "pyautogui.moveTo(100, 100)")
	d.rec.Sync(t)
	d.rec.Clear()
	n := strings.TrimPrefix(d.x.Display, ":")
	res := d.run(t, `
import socket, struct
for name, addr in [('path', '/tmp/.X11-unix/X`+n+`'), ('abstract', '\0/tmp/.X11-unix/X`+n+`')]:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(addr)
        s.sendall(struct.pack('<BxHHHHxx', 0x6c, 11, 0, 0, 0))
        head = s.recv(8)
        left = struct.unpack('<H', head[6:8])[0] * 4
        while left > 0:
            left -= len(s.recv(left))
        # WarpPointer by (37, 23), then GetInputFocus to have it done.
        s.sendall(struct.pack('<BxHIIhhHHhh', 41, 6, 0, 0, 0, 0, 0, 0, 37, 23) + struct.pack('<BxH', 43, 1))
        s.recv(32)
        print(name, 'spoke X', head[:1])
    except OSError as e:
        print(name, 'refused', type(e).__name__)
try:
    open('`+cookie+`').read()
    print('cookie read')
except OSError as e:
    print('cookie refused', type(e).__name__)
`)
	want := "path refused PermissionError\nabstract refused PermissionError\ncookie refused PermissionError\n"
	d.rec.Sync(t)
	if evs := d.rec.Events(); res.Output != want || len(evs) != 0 {
		t.Fatalf("output %q, want %q; the recorder saw %v", res.Output, want, evs)
	}
	// agentd's own way to the display still works.
	d.run(t, "pyautogui.moveTo(120, 130)")
	d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.Motion && e.X == 120 && e.Y == 130 }, 10*time.Second)
}

// sleeperCode double-forks a sleeper into a session of its own, as a
// daemon would, and prints its pid.
const sleeperCode = `
import os
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        os.execv('/bin/sleep', ['sleep', '1000'])
    os._exit(0)
os.wait()
print(int(os.read(r, 32)))
`

// startSleeper runs sleeperCode and returns the sleeper's pid, alive; it
// is killed when the test ends, whatever happened.
func startSleeper(t *testing.T, run func(string) wire.ExecResult) int {
	t.Helper()
	res := run(sleeperCode)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil || res.Traceback != "" {
		t.Fatalf("the sleeper: %+v", res)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("the sleeper %d is not running", pid)
	}
	return pid
}

// alive says pid is a process that has not exited.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestSandboxDescendantsKilled: a process the code started in a session of
// its own (setsid, double fork) ends when the controller session ends, and
// when agentd is killed outright.
func TestSandboxDescendantsKilled(t *testing.T) {
	t.Run("session end", func(t *testing.T) {
		d := newDesk(t)
		pid := startSleeper(t, func(code string) wire.ExecResult { return d.exec(t, code, 0) })
		d.run(t, "print('the sleeper outlives its call')")
		if !alive(pid) {
			t.Fatal("the sleeper ended with its call")
		}
		d.client.Close()
		poll.Until(t, time.Minute, "the code's sleeper is gone after "+"the end of its session", func() bool { return !alive(pid) })
	})
	t.Run("agentd killed", func(t *testing.T) {
		d := newDesk(t)
		pid := startSleeper(t, func(code string) wire.ExecResult { return d.exec(t, code, 0) })
		if err := syscall.Kill(d.pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, time.Minute, "the code's sleeper is gone after "+"agentd's SIGKILL", func() bool { return !alive(pid) })
	})
}

// TestSandboxDescendantsKilledAtGuestDown: in a local guest with --code,
// the sleeper ends with the guest's Down (agentctl guest down), though it
// carries none of the guest's marker.
func TestSandboxDescendantsKilledAtGuestDown(t *testing.T) {
	requirePIL(t)
	prereq.Programs(t, prereq.X, "Xvfb", "openbox")
	g, err := local.Up(context.Background(), local.Config{
		StateDir:     filepath.Join(t.TempDir(), "guest"),
		Width:        640,
		Height:       480,
		AgentdPath:   agentdtest.Binary(t),
		AgentdArgs:   []string{"--code"},
		StartTimeout: time.Minute,
		StopGrace:    5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Down(context.Background()) })
	token, err := os.ReadFile(g.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := guest.Dial(ctx, g.Addr, strings.TrimSpace(string(token)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid := startSleeper(t, func(code string) wire.ExecResult {
		res, err := c.Exec(ctx, code, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res
	})
	if err := g.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "the code's sleeper is gone after "+"the guest's Down", func() bool { return !alive(pid) })
}

// TestSandboxResourceLimits: the worker and what it starts run under
// fixed limits they cannot raise.
func TestSandboxResourceLimits(t *testing.T) {
	d := newDesk(t)
	res := d.run(t, `
import resource, subprocess, sys
names = ['CPU', 'AS', 'FSIZE', 'NOFILE', 'CORE']
def limits():
    return ' '.join('%s=%d/%d' % ((n,) + resource.getrlimit(getattr(resource, 'RLIMIT_' + n))) for n in names)
print(limits())
print(subprocess.run([sys.executable, '-c', 'import resource; print(resource.getrlimit(resource.RLIMIT_AS))'], capture_output=True, text=True).stdout.strip())
soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
print(soft == hard, hard != resource.RLIM_INFINITY)
try:
    resource.setrlimit(resource.RLIMIT_CPU, (7200, 7200))
    print('raised')
except ValueError as e:
    print('not raised')
`)
	want := fmt.Sprintf("CPU=%[1]d/%[1]d AS=%[2]d/%[2]d FSIZE=%[3]d/%[3]d NOFILE=%[4]d/%[4]d CORE=0/0\n(%[2]d, %[2]d)\nTrue True\nnot raised\n",
		codeexec.LimitCPUSeconds, codeexec.LimitAddressSpace, codeexec.LimitFileSize, codeexec.LimitOpenFiles)
	if res.Output != want {
		t.Fatalf("output %q, want %q", res.Output, want)
	}
}

// TestSandboxWorkerNotRootAndNoSecrets: an agentd run as root (as a local
// guest started by root would) runs its worker as nobody; in any case the
// worker finds neither the API key nor the token in its environment nor in
// any process's /proc files.
func TestSandboxWorkerNotRootAndNoSecrets(t *testing.T) {
	requirePIL(t)
	const key = "sk-test-not-a-real-key-0123456789"
	sibling := exec.Command("sleep", "1000")
	sibling.Env = []string{"OPENAI_API_KEY=" + key}
	if err := sibling.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sibling.Process.Kill(); _ = sibling.Wait() })
	d := startAgentdEnv(t, 640, 480, []string{"OPENAI_API_KEY=" + key}, "--code")
	res := d.run(t, `
import os
found = []
for pid in os.listdir('/proc'):
    for f in ('environ', 'cmdline'):
        try:
            data = open('/proc/%s/%s' % (pid, f), 'rb').read()
        except OSError:
            continue
        if b'`+key+`' in data or b'`+testToken+`' in data:
            found.append('%s/%s' % (pid, f))
print(os.getuid(), os.getgid(), os.getgroups(), found, 'OPENAI_API_KEY' in os.environ)
`)
	uid := os.Geteuid()
	if uid == 0 {
		uid = codeexec.NobodyID
	}
	gid := os.Getegid()
	if os.Geteuid() == 0 {
		gid = codeexec.NobodyID
	}
	want := fmt.Sprintf("%d %d [] [] False\n", uid, gid)
	if os.Geteuid() != 0 {
		want = fmt.Sprintf("%d %d ", uid, gid) // a plain user keeps its groups
	}
	if !strings.HasPrefix(res.Output, want) || !strings.HasSuffix(res.Output, "[] False\n") {
		t.Fatalf("output %q, want %q", res.Output, want)
	}
}
