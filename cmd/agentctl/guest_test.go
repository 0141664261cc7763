package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/internal/prereq"
)

func TestGuestUpOptions(t *testing.T) {
	cases := []struct {
		o    backend.UpOptions
		want string // "" means valid
	}{
		{backend.UpOptions{Backend: "local", Name: "default", Size: "1440x900", Apps: "none"}, ""},
		{backend.UpOptions{Backend: "local", Name: "a.b_c-1", Size: "640x480", Apps: "none"}, ""},
		{backend.UpOptions{Backend: "local", Name: "x", Size: "1440x900", Apps: "exercise"}, ""},
		{backend.UpOptions{Backend: "docker", Name: "x", Size: "1440x900", Apps: "none"}, ""},
		{backend.UpOptions{Backend: "docker", Name: "x", Size: "1440x900", Apps: "desktop", Network: true}, ""},
		{backend.UpOptions{Backend: "docker", Name: "x", Size: "1440x900", Apps: "exercise"}, ""},
		{backend.UpOptions{Backend: "local", Name: "x", Size: "1440x900", Apps: "desktop"}, "--apps desktop is for docker and vm guests"},
		{backend.UpOptions{Backend: "local", Name: "x", Size: "1440x900", Apps: "none", Network: true}, "--network is for --backend docker"},
		{backend.UpOptions{Backend: "docker", Name: "docker", Size: "1440x900", Apps: "none"}, "reserved"},
		{backend.UpOptions{Backend: "vm", Name: "x", Size: "1440x900", Apps: "desktop"}, ""},
		{backend.UpOptions{Backend: "vm", Name: "x", Size: "1440x900", Apps: "none", Network: true}, "--network is for --backend docker"},
		{backend.UpOptions{Backend: "qemu", Name: "x", Size: "1440x900", Apps: "none"}, "unknown backend"},
		{backend.UpOptions{Backend: "local", Name: "../etc", Size: "1440x900", Apps: "none"}, "guest name"},
		{backend.UpOptions{Backend: "local", Name: "", Size: "1440x900", Apps: "none"}, "guest name"},
		{backend.UpOptions{Backend: "local", Name: "x", Size: "1440", Apps: "none"}, "--size"},
		{backend.UpOptions{Backend: "local", Name: "x", Size: "10x10", Apps: "none"}, "--size"},
		{backend.UpOptions{Backend: "local", Name: "x", Size: "800x600", Apps: "exercise"}, "needs --size 1440x900"},
		{backend.UpOptions{Backend: "local", Name: "x", Size: "1440x900", Apps: "office"}, "--apps"},
	}
	for _, c := range cases {
		_, _, err := c.o.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.o, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one containing %q", c.o, err, c.want)
		}
	}
}

// agentctlCmd runs the agentctl binary built for the test, with its state
// under rt.
type agentctlCmd struct {
	t   *testing.T
	bin string
	rt  string
	dir string // working directory; default the test's
}

func (a agentctlCmd) run(args ...string) (string, error) {
	a.t.Helper()
	cmd := exec.Command(a.bin, args...)
	cmd.Dir = a.dir
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+a.rt)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (a agentctlCmd) must(args ...string) string {
	a.t.Helper()
	out, err := a.run(args...)
	if err != nil {
		a.t.Fatalf("agentctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

type statusOut = backend.NamedStatus

func (a agentctlCmd) status(name string) statusOut {
	a.t.Helper()
	var st []statusOut
	if err := json.Unmarshal([]byte(a.must("guest", "status", "--name", name, "--json")), &st); err != nil || len(st) != 1 {
		a.t.Fatalf("status --json: %v %+v", err, st)
	}
	return st[0]
}

// processesIn lists processes whose command line mentions dir.
func processesIn(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmd), dir) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// TestGuestUpStatusDown runs the real agentctl binary: up starts a guest
// that outlives the command, status reports it healthy, down removes it;
// a guest whose supervisor is killed dies with it and is reported stale.
func TestGuestUpStatusDown(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	// agentd is found next to agentctl; the local package's stand-in
	// serves /healthz like the real one.
	for pkg, out := range map[string]string{".": "agentctl", "../../local/testdata/fakeagentd": "agentd"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, out), pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
	}
	rt := filepath.Join(dir, "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	a := agentctlCmd{t: t, bin: filepath.Join(bin, "agentctl"), rt: rt}
	t.Cleanup(func() {
		_, _ = a.run("guest", "down", "--name", "one")
		_, _ = a.run("guest", "down", "--name", "two")
	})

	out := a.must("guest", "up", "--name", "one", "--size", "640x480")
	for _, want := range []string{`guest "one" is up (local, display :`, "address:    127.0.0.1:", "token file: " + rt} {
		if !strings.Contains(out, want) {
			t.Errorf("up output lacks %q:\n%s", want, out)
		}
	}
	st := a.status("one")
	if !st.Running || st.Health != "ok" || st.Backend != "local" || st.TokenFile == "" {
		t.Fatalf("status of a running guest: %+v", st)
	}
	if out, err := a.run("guest", "up", "--name", "one"); err == nil || !strings.Contains(out, "already running") {
		t.Errorf("second up of the same name: %v\n%s", err, out)
	}
	if out, err := a.run("guest", "up", "--backend", "qemu"); err == nil || !strings.Contains(out, "unknown backend") {
		t.Errorf("up --backend qemu: %v\n%s", err, out)
	}

	// A second guest runs beside the first; down removes it completely.
	a.must("guest", "up", "--name", "two", "--size", "640x480")
	two := a.status("two")
	if two.Display == st.Display {
		t.Fatalf("two guests on display %s", st.Display)
	}
	out = a.must("guest", "down", "--name", "two")
	if !strings.Contains(out, `guest "two" is down`) {
		t.Errorf("down output: %s", out)
	}
	twoDir := filepath.Join(rt, "agentd", "guests", "two")
	if _, err := os.Stat(twoDir); !os.IsNotExist(err) {
		t.Errorf("guest directory left after down: %v", err)
	}
	if left := processesIn(twoDir); len(left) > 0 {
		t.Errorf("processes left after down: %v", left)
	}
	if _, err := os.Stat("/tmp/.X11-unix/X" + strings.TrimPrefix(two.Display, ":")); !os.IsNotExist(err) {
		t.Errorf("X socket of guest two left: %v", err)
	}
	if st := a.status("one"); st.Health != "ok" {
		t.Fatalf("guest one after guest two went down: %+v", st)
	}

	// Killing the supervisor takes its guest with it.
	oneDir := filepath.Join(rt, "agentd", "guests", "one")
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 15*time.Second, "the guest's processes died with their supervisor", func() bool { return len(processesIn(oneDir)) == 0 })
	if st := a.status("one"); st.Running {
		t.Errorf("status after the supervisor was killed: %+v", st)
	}
	out = a.must("guest", "down", "--name", "one")
	if !strings.Contains(out, "was not running; removed its stale state") {
		t.Errorf("down of a stale guest: %s", out)
	}
	if out, err := a.run("guest", "down", "--name", "one"); err == nil || !strings.Contains(out, "no guest named") {
		t.Errorf("down of a missing guest: %v\n%s", err, out)
	}
}
