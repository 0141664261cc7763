package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
)

// fakeEnv is a test's fake Lima: limactl on PATH, its record, and a
// stand-in for agentd behind the forward.
type fakeEnv struct {
	dir       string // FAKE_LIMA_DIR
	stateRoot string
	agentd    *httptest.Server
	port      int
}

// noStateLeft checks that a failed Up removed the host-side state of the
// guest name again.
func (f *fakeEnv) noStateLeft(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(f.stateRoot, name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state left behind: %v", err)
	}
}

// newFake puts the fake limactl first on PATH and starts an HTTP server
// answering /healthz with status, standing in for agentd behind Lima's
// forward (the guest's port is given to Up as Config.HostPort).
func newFake(t *testing.T, healthz int) *fakeEnv {
	t.Helper()
	f := &fakeEnv{dir: t.TempDir(), stateRoot: filepath.Join(t.TempDir(), "state")}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(f.dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "limactl")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_LIMA_DIR", f.dir)
	// A -race binary sleeps a second on exit, waiting for late reports;
	// the fake is one, run for every limactl call.
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	f.agentd = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(healthz)
	}))
	t.Cleanup(f.agentd.Close)
	_, port, _ := net.SplitHostPort(f.agentd.Listener.Addr().String())
	f.port, _ = strconv.Atoi(port)
	return f
}

// config is a guest whose agentd is this test binary: a real ELF file for
// the host's architecture, which is what Up checks.
func (f *fakeEnv) config(t *testing.T) Config {
	t.Helper()
	return testConfig(t, f.stateRoot, f.port)
}

// testConfig is the guest of config, its state under stateRoot, forwarded
// to port (0: any free port).
func testConfig(t *testing.T, stateRoot string, port int) Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Name:         "agentd-test",
		Size:         "1280x800",
		Apps:         []string{"form", "mousepad", "firefox"},
		URL:          "http://127.0.0.1:8080/",
		File:         "note.txt",
		Env:          []string{"GUEST_EXTRA=a b"},
		Repo:         "..",
		Agentd:       self,
		PickupForm:   self,
		HostPort:     port,
		StateRoot:    stateRoot,
		StartTimeout: time.Minute,
	}
}

// calls returns the recorded invocations.
func (f *fakeEnv) calls(t *testing.T) []call {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "calls.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var cs []call
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var c call
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

func (f *fakeEnv) instance(name string) string { return filepath.Join(f.dir, "instances", name) }

// wantCalls compares the recorded argument lists with want, one per line.
func wantCalls(t *testing.T, got []call, want [][]string) {
	t.Helper()
	var g, w []string
	for _, c := range got {
		g = append(g, strings.Join(c.Args, " "))
	}
	for _, a := range want {
		w = append(w, strings.Join(a, " "))
	}
	if !slices.Equal(g, w) {
		t.Fatalf("limactl calls:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
}

// upCalls is the command sequence of a successful Up of cfg.
func upCalls(cfg Config) [][]string {
	dir := filepath.Join(cfg.StateRoot, cfg.Name)
	sh := func(cmd ...string) []string { return append([]string{"shell", "--workdir=/", cfg.Name}, cmd...) }
	return [][]string{
		{"--version"},
		{"list", "--json", cfg.Name},
		{"create", "--tty=false", "--name=" + cfg.Name, filepath.Join(dir, "lima.yaml")},
		{"start", "--tty=false", "--timeout=1m0s", cfg.Name},
		{"copy", "--recursive", filepath.Join(dir, "stage"), cfg.Name + ":/tmp/agentd-setup"},
		sh("sudo", "env", "GUEST_UID="+strconv.Itoa(guestUID()), "bash", "/tmp/agentd-setup/setup.sh", "/tmp/agentd-setup"),
		sh("sudo", "install", "-m", "0600", "-o", "agent", "-g", "agent", "/dev/stdin", "/var/lib/agentd/token"),
		sh("sudo", "systemctl", "enable", "--now", "agentd-desktop.service"),
		sh("sudo", "/opt/agentd/wait-ready.sh", "60"),
	}
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestUpStatusReadFileDown(t *testing.T) {
	f := newFake(t, http.StatusOK)
	cfg := f.config(t)
	var progress []string
	g, err := Up(ctxT(t), cfg, func(s string) { progress = append(progress, s) })
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	wantCalls(t, f.calls(t), upCalls(cfg))
	if g.Addr != f.agentd.Listener.Addr().String() || g.Name != cfg.Name || g.Width != 1280 || g.Height != 800 || g.Home != "/home/agent" {
		t.Errorf("guest %+v", g)
	}
	if !slices.Contains(progress, "INFO[0000] READY. Run `limactl shell agentd-test` to open the shell.") {
		t.Errorf("limactl's output is not passed on as progress: %q", progress)
	}

	// The token: made on the host (0600, in a 0700 directory), delivered
	// on standard input only.
	fi, err := os.Stat(g.TokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v %v", g.TokenFile, fi, err)
	}
	if di, err := os.Stat(g.StateDir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("state directory: %v %v", di, err)
	}
	tok, err := g.Token()
	if err != nil || len(tok) != 64 {
		t.Fatalf("token %q: %v", tok, err)
	}
	for i, c := range f.calls(t) {
		if strings.Contains(strings.Join(c.Args, " "), tok) {
			t.Errorf("call %d has the token on its command line", i)
		}
		if c.Stdin != "" && !slices.Contains(c.Args, "/dev/stdin") {
			t.Errorf("call %d got standard input: %v", i, c.Args)
		}
	}
	delivered, err := os.ReadFile(filepath.Join(f.instance(cfg.Name), "fs/var/lib/agentd/token"))
	if err != nil || strings.TrimSpace(string(delivered)) != tok {
		t.Fatalf("delivered token %q, want the host's: %v", delivered, err)
	}

	// What was copied in: the Docker image's own scripts, unchanged, and
	// the VM's scripts and settings.
	copied := filepath.Join(f.instance(cfg.Name), "fs/tmp/agentd-setup")
	for _, name := range []string{"provision.sh", "entrypoint.sh", "healthcheck.sh"} {
		want, err := os.ReadFile(filepath.Join("../docker", name))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(copied, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s in the guest differs from docker/%s (%v)", name, name, err)
		}
	}
	for _, name := range []string{"setup.sh", "desktop.sh", "wait-ready.sh", "agentd-desktop.service", "agentd", "pickup-form"} {
		if _, err := os.Stat(filepath.Join(copied, name)); err != nil {
			t.Errorf("not copied in: %v", err)
		}
	}
	env, err := os.ReadFile(filepath.Join(copied, "guest.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"SCREEN_SIZE='1280x800'", "GUEST_APPS='form mousepad firefox'",
		"GUEST_URL='http://127.0.0.1:8080/'", "GUEST_FILE='note.txt'", "AGENTD_LISTEN='127.0.0.1:7010'", "GUEST_EXTRA='a b'"} {
		if !strings.Contains(string(env), "\n"+line+"\n") {
			t.Errorf("guest.env lacks %s:\n%s", line, env)
		}
	}
	if _, err := os.Stat(filepath.Join(g.StateDir, "stage")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the staged copy of agentd stays on the host: %v", err)
	}

	// Reading results back out, as the exercise does.
	note := filepath.Join(f.instance(cfg.Name), "fs/home/agent/note.txt")
	if err := os.MkdirAll(filepath.Dir(note), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(note, []byte("Zoë\nline two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := len(f.calls(t))
	if b, err := g.ReadFile(ctxT(t), "/home/agent/note.txt"); err != nil || string(b) != "Zoë\nline two\n" {
		t.Fatalf("ReadFile: %q, %v", b, err)
	}
	if _, err := g.ReadFile(ctxT(t), "/home/agent/missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := g.ReadFile(ctxT(t), "note.txt"); err == nil || !strings.Contains(err.Error(), "absolute path") {
		t.Fatalf("ReadFile of a relative path: %v", err)
	}
	// A backend instance reads relative to the home.
	if b, err := newInstance(g, "", "", backend.Outputs{}).ReadFile(ctxT(t), "note.txt"); err != nil || string(b) != "Zoë\nline two\n" {
		t.Fatalf("instance ReadFile: %q, %v", b, err)
	}
	logs, err := g.Logs(ctxT(t), 30)
	if err != nil || !strings.Contains(logs, "started agentd") {
		t.Fatalf("Logs: %q, %v", logs, err)
	}
	st, err := g.Status(ctxT(t))
	if err != nil || st != (Status{State: "Running", Running: true, Health: "healthy", Dir: f.instance(cfg.Name)}) {
		t.Fatalf("Status: %+v, %v", st, err)
	}
	sh := func(cmd ...string) []string { return append([]string{"shell", "--workdir=/", cfg.Name}, cmd...) }
	wantCalls(t, f.calls(t)[n:], [][]string{
		sh("sudo", "-u", "agent", "cat", "--", "/home/agent/note.txt"),
		sh("sudo", "-u", "agent", "cat", "--", "/home/agent/missing.txt"),
		sh("sudo", "-u", "agent", "cat", "--", "/home/agent/note.txt"),
		sh("sudo", "journalctl", "--unit=agentd-desktop.service", "--no-pager", "--output=cat", "--lines=30"),
		{"list", "--json", cfg.Name},
	})

	// Another process finds the guest by name.
	o, err := Open(Config{Name: cfg.Name, StateRoot: f.stateRoot})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if o.Addr != g.Addr || o.TokenFile != g.TokenFile || o.Width != 1280 {
		t.Errorf("Open: %+v, want %+v", o, g)
	}
	all, err := List(Config{StateRoot: f.stateRoot})
	if err != nil || len(all) != 1 || all[0].Name != cfg.Name {
		t.Errorf("List: %v, %v", all, err)
	}

	n = len(f.calls(t))
	if err := o.Down(ctxT(t)); err != nil {
		t.Fatalf("Down: %v", err)
	}
	wantCalls(t, f.calls(t)[n:], [][]string{{"list", "--json", cfg.Name}, {"delete", "--force", cfg.Name}})
	if _, err := os.Stat(g.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory after Down: %v", err)
	}
	// The other handle finds nothing left to delete.
	if err := g.Down(ctxT(t)); err != nil {
		t.Fatalf("Down of a guest that is gone: %v", err)
	}
	if err := g.Down(ctxT(t)); err != nil {
		t.Fatalf("second Down: %v", err)
	}
	wantCalls(t, f.calls(t)[n+2:], [][]string{{"list", "--json", cfg.Name}})
	if st, err := g.Status(ctxT(t)); err != nil || st.State != "" {
		t.Errorf("Status after Down: %+v, %v", st, err)
	}
}

func TestUpLimactlMissing(t *testing.T) {
	f := newFake(t, http.StatusOK)
	cfg := f.config(t)
	t.Setenv("PATH", t.TempDir())
	_, err := Up(ctxT(t), cfg, nil)
	if !errors.Is(err, ErrNoLimactl) || !strings.Contains(err.Error(), "brew install lima") {
		t.Fatalf("Up without limactl: %v; want ErrNoLimactl with the install hint", err)
	}
	cfg.Limactl = filepath.Join(t.TempDir(), "limactl")
	if _, err := Up(ctxT(t), cfg, nil); !errors.Is(err, ErrNoLimactl) {
		t.Fatalf("Up with a Limactl that does not exist: %v", err)
	}
	f.noStateLeft(t, cfg.Name)
}

func TestUpLimaTooOld(t *testing.T) {
	f := newFake(t, http.StatusOK)
	t.Setenv("FAKE_LIMA_VERSION", "limactl version 0.23.2")
	cfg := f.config(t)
	_, err := Up(ctxT(t), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "limactl 0.23 is too old") || !strings.Contains(err.Error(), "brew install lima") {
		t.Fatalf("Up with Lima 0.23: %v", err)
	}
	wantCalls(t, f.calls(t), [][]string{{"--version"}})
	f.noStateLeft(t, cfg.Name)
}

// failedUp checks what every failed start has in common: the error names
// the guest, the VM is deleted, nothing is left on the host.
func failedUp(t *testing.T, f *fakeEnv, cfg Config, upTo string) error {
	t.Helper()
	_, err := Up(ctxT(t), cfg, nil)
	if err == nil {
		t.Fatal("Up succeeded")
	}
	if !strings.HasPrefix(err.Error(), "vm guest "+cfg.Name+": ") {
		t.Errorf("error does not name the guest: %v", err)
	}
	want := upCalls(cfg)
	i := slices.IndexFunc(want, func(a []string) bool { return strings.Contains(strings.Join(a, " "), upTo) })
	want = append(want[:i+1], []string{"list", "--json", cfg.Name}, []string{"delete", "--force", cfg.Name})
	wantCalls(t, f.calls(t), want)
	if _, err := os.Stat(f.instance(cfg.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("instance left behind: %v", err)
	}
	f.noStateLeft(t, cfg.Name)
	return err
}

// wantLimaLog checks that err carries the last lines of Lima's log.
func wantLimaLog(t *testing.T, f *fakeEnv, err error) {
	t.Helper()
	header := "--- last lines of Lima's log (" + filepath.Join(f.instance("agentd-test"), "ha.stderr.log") + ") ---"
	if !strings.Contains(err.Error(), header+"\n"+strings.Join(haLog, "\n")) {
		t.Errorf("error lacks Lima's log:\n%v", err)
	}
}

func TestUpStartFails(t *testing.T) {
	f := newFake(t, http.StatusOK)
	t.Setenv("FAKE_LIMA_FAIL", "start")
	err := failedUp(t, f, f.config(t), "start")
	if !strings.Contains(err.Error(), "limactl start --tty=false --timeout=1m0s agentd-test: exit status 1") ||
		!strings.Contains(err.Error(), limaLine("fatal", `fake failure of "start"`)) {
		t.Errorf("error lacks the failed command and its output:\n%v", err)
	}
	wantLimaLog(t, f, err)
}

func TestUpStartTimesOut(t *testing.T) {
	f := newFake(t, http.StatusOK)
	// What limactl start says when its --timeout passes.
	t.Setenv("FAKE_LIMA_FAIL", "start")
	t.Setenv("FAKE_LIMA_FAIL_MSG", `did not receive an event with the "running" status`)
	err := failedUp(t, f, f.config(t), "start")
	if !strings.Contains(err.Error(), limaLine("fatal", `did not receive an event with the "running" status`)) {
		t.Errorf("error lacks limactl's message:\n%v", err)
	}
	wantLimaLog(t, f, err)
}

func TestUpDeadline(t *testing.T) {
	f := newFake(t, http.StatusOK)
	// The first limactl call never ends: Up gives up at StartTimeout and
	// kills it.
	t.Setenv("FAKE_LIMA_HANG", "--version")
	cfg := f.config(t)
	cfg.StartTimeout = 2 * time.Second
	_, err := Up(ctxT(t), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "vm guest agentd-test: not ready within 2s: limactl --version: ") ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Up with a limactl that hangs: %v", err)
	}
	f.noStateLeft(t, cfg.Name)
}

func TestUpProvisioningFails(t *testing.T) {
	f := newFake(t, http.StatusOK)
	t.Setenv("FAKE_LIMA_FAIL", "setup.sh")
	err := failedUp(t, f, f.config(t), "setup.sh")
	if !strings.Contains(err.Error(), "fake output before the failure\n"+limaLine("fatal", `fake failure of "setup.sh"`)) {
		t.Errorf("error lacks the provisioning's last lines:\n%v", err)
	}
}

func TestUpForwardNeverHealthy(t *testing.T) {
	// The guest says agentd is healthy, but the forward answers 503: Up
	// keeps asking until its context ends (here: the stand-in cancels it
	// after a few answers) and says what it got.
	f := newFake(t, http.StatusServiceUnavailable)
	ctx, cancel := context.WithCancel(ctxT(t))
	var asked atomic.Int32
	f.agentd.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 3 {
			cancel()
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	cfg := f.config(t)
	_, err := Up(ctx, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "agentd does not answer through the forward at 127.0.0.1:"+strconv.Itoa(f.port)+" (/healthz answered 503)") ||
		!errors.Is(err, context.Canceled) {
		t.Fatalf("Up: %v; want what the forward answered", err)
	}
	wantCalls(t, f.calls(t), append(upCalls(cfg), []string{"list", "--json", cfg.Name}, []string{"delete", "--force", cfg.Name}))
}

func TestUpRefusesWrongAgentd(t *testing.T) {
	f := newFake(t, http.StatusOK)
	cfg := f.config(t)
	// The test binary is built for the host; ask for the other architecture.
	cfg.Arch = "aarch64"
	if hostArch() == "aarch64" {
		cfg.Arch = "x86_64"
	}
	_, err := Up(ctxT(t), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "agentd at "+cfg.Agentd+" is built for ") ||
		!strings.Contains(err.Error(), "the guest is "+cfg.Arch+": make agentd-linux-"+goarch[cfg.Arch]+" builds it") {
		t.Fatalf("Up with agentd for the wrong architecture: %v", err)
	}
	cfg.Arch = hostArch()
	cfg.PickupForm = filepath.Join(t.TempDir(), "pickup-form")
	if _, err := Up(ctxT(t), cfg, nil); err == nil || !strings.Contains(err.Error(), "pickup-form for the "+cfg.Arch+" guest is missing") {
		t.Fatalf("Up with the form but without pickup-form: %v", err)
	}
	// Without the form, pickup-form is not needed.
	cfg.Apps = []string{"firefox"}
	cfg.Agentd = filepath.Join(t.TempDir(), "agentd")
	if _, err := Up(ctxT(t), cfg, nil); err == nil || !strings.Contains(err.Error(), "agentd for the "+cfg.Arch+" guest is missing") {
		t.Fatalf("Up without agentd: %v", err)
	}
	if calls := f.calls(t); len(calls) != 0 {
		t.Errorf("limactl ran before the files were checked: %v", calls)
	}
}

func TestUpRefusesExistingName(t *testing.T) {
	f := newFake(t, http.StatusOK)
	cfg := f.config(t)
	if err := os.MkdirAll(filepath.Join(f.stateRoot, cfg.Name), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Up(ctxT(t), cfg, nil); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("Up over an existing guest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.stateRoot, cfg.Name)); err != nil {
		t.Errorf("the existing guest's state was removed: %v", err)
	}
}
