//go:build linux

package codeexec_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
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
