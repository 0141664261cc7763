//go:build linux

package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
)

// fakeAgentd is the test stand-in for agentd, built once in TestMain.
var fakeAgentd string

func TestMain(m *testing.M) {
	// A named guest runs under this test binary as its supervisor, as it
	// runs under 'agentctl guest supervise'.
	if len(os.Args) > 1 && os.Args[1] == "supervise" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := Supervise(ctx, os.Args[2:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	SupervisorArgs = []string{"supervise"}
	dir, err := os.MkdirTemp("", "local-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeAgentd = filepath.Join(dir, "agentd")
	build := exec.Command("go", "build", "-o", fakeAgentd, "./testdata/fakeagentd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build fakeagentd: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireX ends the test as prereq does when Xvfb or openbox is missing.
func requireX(t *testing.T) {
	t.Helper()
	prereq.Programs(t, prereq.X, "Xvfb", "openbox")
}

func testConfig(t *testing.T) Config {
	return Config{
		StateDir:     filepath.Join(t.TempDir(), "guest"),
		Width:        640,
		Height:       480,
		AgentdPath:   fakeAgentd,
		StartTimeout: 30 * time.Second,
		StopGrace:    3 * time.Second,
	}
}

func up(t *testing.T, cfg Config) *Guest {
	t.Helper()
	g, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { _ = g.Down(context.Background()) })
	return g
}

// leftovers is what a guest could leave on the machine.
type leftovers struct {
	marker  string
	display int
	pids    []int
	state   string
}

func snapshot(g *Guest) leftovers {
	return leftovers{marker: g.marker, display: g.displayNo, pids: markedProcesses(g.marker), state: g.StateDir}
}

// check fails t for anything of the guest still on the machine.
func (l leftovers) check(t *testing.T) {
	t.Helper()
	if left := markedProcesses(l.marker); len(left) > 0 {
		t.Errorf("processes of the guest still running: %v", left)
	}
	for _, pid := range l.pids {
		if st, ok := readStat(pid); ok && st.state != 'Z' {
			t.Errorf("process %d of the guest still running", pid)
		}
	}
	for _, f := range []string{
		fmt.Sprintf("/tmp/.X11-unix/X%d", l.display),
		fmt.Sprintf("/tmp/.X%d-lock", l.display),
		l.state,
	} {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s left behind (stat: %v)", f, err)
		}
	}
	if segs := shmCreatedBy(t, l.pids); len(segs) > 0 {
		t.Errorf("shared memory segments of the guest left: %v", segs)
	}
}

// shmCreatedBy lists System V shared memory segments created by pids.
func shmCreatedBy(t *testing.T, pids []int) []int {
	t.Helper()
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		t.Fatalf("read shared memory segments: %v", err)
	}
	defer f.Close()
	ours := map[int]bool{}
	for _, p := range pids {
		ours[p] = true
	}
	var ids []int
	sc := bufio.NewScanner(f)
	sc.Scan()
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		id, _ := strconv.Atoi(fl[1])
		cpid, _ := strconv.Atoi(fl[4])
		if ours[cpid] {
			ids = append(ids, id)
		}
	}
	return ids
}

func healthy(t *testing.T, g *Guest) {
	t.Helper()
	if err := g.Health(context.Background()); err != nil {
		t.Fatalf("guest %s: /healthz: %v", g.Display, err)
	}
	if _, err := g.xwait(context.Background(), "", false); err != nil {
		t.Fatalf("guest %s: window manager not running: %v", g.Display, err)
	}
}

func TestTwoGuestsSideBySideAndCleanTeardown(t *testing.T) {
	requireX(t)
	cfgA := testConfig(t)
	cfgA.AgentdArgs = []string{"--leak-shm"} // Down must remove what a child leaked
	var setupEnv []string
	cfgA.Setup = func(_ context.Context, env []string) error { setupEnv = env; return nil }
	a := up(t, cfgA)
	if !slices.Equal(setupEnv, a.Env()) || !strings.HasPrefix(setupEnv[0], "DISPLAY=:") {
		t.Errorf("Setup got env %q, want %q", setupEnv, a.Env())
	}
	b := up(t, testConfig(t))
	if a.Display == b.Display {
		t.Fatalf("both guests got display %s", a.Display)
	}
	if a.Addr == b.Addr {
		t.Fatalf("both guests got address %s", a.Addr)
	}
	healthy(t, a)
	healthy(t, b)

	for _, g := range []*Guest{a, b} {
		fi, err := os.Stat(g.StateDir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("state dir %s: mode %v, %v", g.StateDir, fi.Mode(), err)
		}
		fi, err = os.Stat(g.TokenFile)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("token file %s: mode %v, %v", g.TokenFile, fi.Mode(), err)
		}
		tok, _ := os.ReadFile(g.TokenFile)
		if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(tok) {
			t.Errorf("token %q is not 32 random bytes in hex", tok)
		}
	}
	if ta, tb := readFile(t, a.TokenFile), readFile(t, b.TokenFile); ta == tb {
		t.Error("two guests share a token")
	}

	// The X display refuses a client without the cookie.
	xdpyinfo := exec.Command("xdpyinfo")
	xdpyinfo.Env = []string{"DISPLAY=" + a.Display, "XAUTHORITY=/nonexistent"}
	if _, err := exec.LookPath("xdpyinfo"); err == nil {
		if out, err := xdpyinfo.CombinedOutput(); err == nil {
			t.Errorf("display %s accepted a client without the cookie:\n%s", a.Display, out)
		}
	}

	leftA := snapshot(a)
	if len(shmCreatedBy(t, leftA.pids)) == 0 {
		t.Fatal("fake agentd did not create its shared memory segment")
	}
	leftB := snapshot(b)
	start := time.Now()
	if err := b.Down(context.Background()); err != nil {
		t.Fatalf("Down b: %v", err)
	}
	t.Logf("Down took %v", time.Since(start))
	leftB.check(t)
	healthy(t, a) // the first guest is undisturbed
	select {
	case <-a.Failed():
		t.Fatalf("guest a failed: %v", a.Err())
	default:
	}
	if err := a.Down(context.Background()); err != nil {
		t.Fatalf("Down a: %v", err)
	}
	leftA.check(t)
	if err := a.Down(context.Background()); err != nil {
		t.Fatalf("second Down: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestXvfbFailsWithClearError(t *testing.T) {
	requireX(t)
	script := filepath.Join(t.TempDir(), "Xvfb")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'Fatal server error: no screens found (test)' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.XvfbPath = script
	_, err := Up(context.Background(), cfg)
	if err == nil {
		t.Fatal("Up succeeded with a failing Xvfb")
	}
	for _, want := range []string{"xvfb", "exit status 1", "no screens found (test)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(cfg.StateDir); !os.IsNotExist(err) {
		t.Errorf("state dir left after a failed Up: %v", err)
	}
}

func TestAgentdFailsWithClearError(t *testing.T) {
	requireX(t)
	cfg := testConfig(t)
	cfg.AgentdArgs = []string{"--fail", "cannot open display for capture (test)"}
	cfg.KeepLogs = true
	_, err := Up(context.Background(), cfg)
	if err == nil {
		t.Fatal("Up succeeded with a failing agentd")
	}
	for _, want := range []string{"agentd exited before it was healthy", "cannot open display for capture (test)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	// KeepLogs keeps the logs, and only them.
	entries, _ := os.ReadDir(cfg.StateDir)
	if len(entries) != 1 || entries[0].Name() != "logs" {
		t.Errorf("state dir after Down with KeepLogs: %v", entries)
	}
	if !strings.Contains(readFile(t, filepath.Join(cfg.StateDir, "logs", "agentd.log")), "(test)") {
		t.Error("agentd log lost")
	}
}

func TestMissingAgentd(t *testing.T) {
	requireX(t)
	cfg := testConfig(t)
	cfg.AgentdPath = filepath.Join(t.TempDir(), "agentd")
	_, err := Up(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "agentd") {
		t.Fatalf("Up with a missing agentd: %v", err)
	}
	if _, err := FindAgentd(""); err != nil && !strings.Contains(err.Error(), "make build") {
		t.Errorf("missing agentd error does not say how to build it: %v", err)
	}
}

func TestEarlyExitIsReported(t *testing.T) {
	requireX(t)
	g := up(t, testConfig(t))
	agentd := g.procs[len(g.procs)-1]
	signalGroup(agentd.pid, 9)
	select {
	case <-g.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("an agentd killed from outside was not reported")
	}
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "agentd exited") {
		t.Fatalf("Err = %v", err)
	}
}

// TestRealAgentd runs the real agentd (agentdtest.Binary).
func TestRealAgentd(t *testing.T) {
	requireX(t)
	cfg := testConfig(t)
	cfg.AgentdPath = agentdtest.Binary(t)
	g := up(t, cfg)
	healthy(t, g)
	left := snapshot(g)
	if err := g.Down(context.Background()); err != nil {
		t.Fatalf("Down: %v", err)
	}
	left.check(t)
}
