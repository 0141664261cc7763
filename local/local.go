// Package local runs a guest desktop as processes of this machine: Xvfb on a
// free display, a window manager, optional applications, and agentd. It is
// the backend for development and tests (docs/design.md, "Guests").
//
// Every process is a child that Up starts and Down stops: each runs in its
// own process group (so helpers it forks are signalled with it) and, on
// Linux, gets SIGTERM if its owner dies. Down stops them in reverse order
// and removes what they may leave: X lock file and socket, System V shared
// memory segments, and the guest's private state directory. Processes that
// left the group (setsid) are still found: every child carries a per-guest
// marker in its environment, which descendants inherit.
//
// The display accepts only clients holding the guest's X cookie (Xvfb -auth)
// and does not listen on TCP; agentd's token is a fresh random value in a
// 0600 file inside a 0700 state directory.
package local

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"image"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/internal/healthz"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/statedir"
	"github.com/agentd-dev/agentd/internal/xauth"
)

// Defaults for a zero Config.
const (
	DefaultWidth        = 1440
	DefaultHeight       = 900
	DefaultDepth        = 24
	DefaultStartTimeout = 90 * time.Second
	DefaultStopGrace    = 5 * time.Second
)

// markerEnv names the environment variable that tags every process of one
// guest, so Down can find descendants that escaped the process group.
const markerEnv = "AGENTD_LOCAL_GUEST"

// Config describes a local guest. The zero value is a 1440×900×24 desktop
// with openbox, no applications, and agentd found next to the running
// executable or on $PATH.
type Config struct {
	// StateDir is the guest's private directory; Up creates it (mode 0700)
	// and it must not exist yet. Empty: a fresh directory under StateRoot.
	StateDir string
	// KeepLogs keeps StateDir/logs after Down (everything else is removed).
	KeepLogs bool

	Width, Height, Depth int

	// XvfbPath and WindowManagerPath default to "Xvfb" and "openbox" on $PATH.
	XvfbPath          string
	WindowManagerPath string
	// WindowManagerConfig is an openbox rc.xml passed as --config-file;
	// empty: openbox's own default.
	WindowManagerConfig string

	// Setup, if set, runs once the window manager manages the screen and
	// before the apps start, with the guest's DISPLAY and XAUTHORITY in
	// env: for settings the apps should find from their start (a keyboard
	// map, X resources).
	Setup func(ctx context.Context, env []string) error
	// Apps start after the window manager and before agentd, in order.
	Apps []App

	// AgentdPath is the agentd binary. Empty: "agentd" next to the running
	// executable, else on $PATH.
	AgentdPath string
	// AgentdArgs are appended to agentd's command line.
	AgentdArgs []string

	// StartTimeout bounds Up from the first process to a healthy agentd.
	StartTimeout time.Duration
	// StopGrace is how long Down waits after SIGTERM before SIGKILL.
	StopGrace time.Duration
}

// App is an application of the desktop, started with the guest's
// environment (DISPLAY, XAUTHORITY, HOME and XDG directories inside the
// state directory) plus Env.
type App struct {
	// Name names the application in logs and errors (logs/<Name>.log).
	Name string
	// Path is the program: a path, or a name looked up on $PATH.
	Path string
	Args []string
	// Env is added to the guest's environment; a variable set here wins.
	Env []string
	// WindowClass, if set, makes Up wait until a viewable top-level window
	// whose WM_CLASS class is WindowClass exists.
	WindowClass string
	// Ready, if set, runs after that window appeared (window is its
	// geometry in screen pixels, or empty without WindowClass); Up fails
	// with its error.
	Ready func(ctx context.Context, window image.Rectangle) error
}

// Guest is a running local desktop. Its fields are read-only.
type Guest struct {
	Display    string // X display, e.g. ":3"
	Addr       string // agentd's address, e.g. "127.0.0.1:41234"
	TokenFile  string // file holding agentd's token (0600)
	Xauthority string // X cookie file clients of Display need
	StateDir   string
	Width      int
	Height     int

	cfg       Config
	marker    string
	displayNo int
	// agentdPath is the agentd binary, also the guest's X client (xwait).
	agentdPath string
	procs      []*proc // in start order

	mu       sync.Mutex
	stopping bool
	failed   chan struct{} // closed when a process exits before Down
	failErr  error
	downOnce sync.Once
	downErr  error
}

// StateRoot returns the private directory under which local guests keep
// their state: $XDG_RUNTIME_DIR/agentd, else <tmp>/agentd-<uid> (see
// statedir).
func StateRoot() (string, error) { return statedir.Root("agentd") }

// Up starts a guest and returns once agentd answers /healthz with 200. On
// error everything it started is stopped again and the error says which
// process failed, with the last lines of its log.
func Up(ctx context.Context, cfg Config) (*Guest, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	cfg = withDefaults(cfg)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	bins, err := cfg.locate()
	if err != nil {
		return nil, err
	}
	g := &Guest{cfg: cfg, marker: randhex.String(16), Width: cfg.Width, Height: cfg.Height, failed: make(chan struct{})}
	if err := g.makeStateDir(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := g.start(ctx, bins); err != nil {
		// A start error is the story; a teardown error is only appended.
		if downErr := g.Down(context.Background()); downErr != nil {
			err = fmt.Errorf("%w (and tearing down: %v)", err, downErr)
		}
		return nil, fmt.Errorf("local guest: %w", err)
	}
	return g, nil
}

func withDefaults(cfg Config) Config {
	cfg.Width = cmp.Or(cfg.Width, DefaultWidth)
	cfg.Height = cmp.Or(cfg.Height, DefaultHeight)
	cfg.Depth = cmp.Or(cfg.Depth, DefaultDepth)
	cfg.XvfbPath = cmp.Or(cfg.XvfbPath, "Xvfb")
	cfg.WindowManagerPath = cmp.Or(cfg.WindowManagerPath, "openbox")
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	return cfg
}

func (cfg Config) check() error {
	if cfg.Width < 64 || cfg.Height < 64 || cfg.Width > 8192 || cfg.Height > 8192 {
		return fmt.Errorf("local guest: screen size %dx%d out of range (64..8192)", cfg.Width, cfg.Height)
	}
	if cfg.Depth != 24 && cfg.Depth != 16 {
		return fmt.Errorf("local guest: depth %d: use 24 or 16", cfg.Depth)
	}
	seen := map[string]bool{"xvfb": true, "wm": true, "agentd": true}
	for _, a := range cfg.Apps {
		if a.Name == "" || strings.ContainsAny(a.Name, `/\ `) || seen[a.Name] {
			return fmt.Errorf("local guest: app name %q is empty, has a slash or space, or is used twice", a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}

// binaries are the resolved program paths of one guest.
type binaries struct {
	xvfb, wm, agentd string
	apps             []string
}

// locate resolves every program before anything starts, so a missing one
// is reported by name instead of as a half-started desktop.
func (cfg Config) locate() (binaries, error) {
	var b binaries
	var err error
	if b.xvfb, err = exec.LookPath(cfg.XvfbPath); err != nil {
		return b, fmt.Errorf("local guest: Xvfb: %w (install it with 'make deps')", err)
	}
	if b.wm, err = exec.LookPath(cfg.WindowManagerPath); err != nil {
		return b, fmt.Errorf("local guest: window manager: %w (install openbox with 'make deps')", err)
	}
	if b.agentd, err = FindAgentd(cfg.AgentdPath); err != nil {
		return b, err
	}
	for _, a := range cfg.Apps {
		p, err := exec.LookPath(a.Path)
		if err != nil {
			return b, fmt.Errorf("local guest: app %s: %w (is it installed? 'make deps')", a.Name, err)
		}
		b.apps = append(b.apps, p)
	}
	return b, nil
}

// FindAgentd looks for agentd where a build puts it: the explicit path,
// next to the running executable (bin/agentctl beside bin/agentd), $PATH.
// The path is absolute, so that it names the same binary from any folder.
func FindAgentd(explicit string) (string, error) {
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("local guest: agentd: %w", err)
		}
		return filepath.Abs(p)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "agentd")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("agentd"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("local guest: agentd binary not found next to this program or on $PATH: build it with 'make build'")
}

func (g *Guest) makeStateDir() error {
	if g.cfg.StateDir == "" {
		root, err := StateRoot()
		if err != nil {
			return fmt.Errorf("local guest: %w", err)
		}
		dir, err := os.MkdirTemp(root, "local-")
		if err != nil {
			return fmt.Errorf("local guest: create state directory: %w", err)
		}
		g.StateDir = dir
	} else {
		if err := os.Mkdir(g.cfg.StateDir, 0o700); err != nil {
			return fmt.Errorf("local guest: create state directory: %w", err)
		}
		g.StateDir = g.cfg.StateDir
	}
	for _, d := range []string{"logs", "home", "tmp", "runtime"} {
		if err := os.Mkdir(filepath.Join(g.StateDir, d), 0o700); err != nil {
			_ = os.RemoveAll(g.StateDir)
			return fmt.Errorf("local guest: %w", err)
		}
	}
	return nil
}

func (g *Guest) logPath(name string) string { return filepath.Join(g.StateDir, "logs", name+".log") }

func (g *Guest) start(ctx context.Context, bins binaries) error {
	g.agentdPath = bins.agentd
	if err := g.startX(ctx, bins.xvfb); err != nil {
		return err
	}
	if err := g.startWM(ctx, bins.wm); err != nil {
		return err
	}
	if g.cfg.Setup != nil {
		if err := g.cfg.Setup(ctx, g.Env()); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	for i, a := range g.cfg.Apps {
		if err := g.startApp(ctx, a, bins.apps[i]); err != nil {
			return err
		}
	}
	return g.startAgentd(ctx, bins.agentd)
}

// startX starts Xvfb, which picks a free display itself (-displayfd): no
// guessing, no race with another server choosing the same number.
func (g *Guest) startX(ctx context.Context, path string) error {
	cookie := make([]byte, 16)
	_, _ = rand.Read(cookie) // does not fail (see randhex)
	g.Xauthority = filepath.Join(g.StateDir, "Xauthority")
	// The server reads every cookie in its -auth file whatever the display
	// number; clients match it, so the number is filled in once known.
	if err := xauth.Write(g.Xauthority, "", cookie); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("xvfb: %w", err)
	}
	defer r.Close()
	screen := fmt.Sprintf("%dx%dx%d", g.cfg.Width, g.cfg.Height, g.cfg.Depth)
	p, err := g.spawn("xvfb", path, []string{"-displayfd", "3", "-screen", "0", screen,
		"-nolisten", "tcp", "-noreset", "-auth", g.Xauthority, "-dpi", "96"}, nil, w)
	w.Close()
	if err != nil {
		return err
	}
	line := make(chan string, 1)
	go func() {
		// A line with the number, or EOF if Xvfb exits first.
		s, _ := bufio.NewReader(io.LimitReader(r, 32)).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var got string
	select {
	case got = <-line:
	case <-ctx.Done():
		return p.failure("did not report a display", ctx.Err())
	}
	n, err := strconv.Atoi(got)
	if err != nil {
		// No number: Xvfb exited. Wait for it so that its log is complete.
		select {
		case <-p.exited:
			return p.failure("did not start", p.exitErr())
		case <-ctx.Done():
			return p.failure(fmt.Sprintf("reported display %q", got), ctx.Err())
		}
	}
	g.displayNo = n
	g.Display = ":" + got
	return xauth.Write(g.Xauthority, got, cookie)
}

// startWM starts openbox and waits until it has finished starting: it runs
// its --startup command only then. A window mapped earlier, while openbox
// has announced itself (_NET_SUPPORTING_WM_CHECK) but still starts up, can
// be left unmapped for good.
func (g *Guest) startWM(ctx context.Context, path string) error {
	ready := filepath.Join(g.StateDir, "wm-ready")
	args := []string{"--sm-disable", "--startup", "touch '" + strings.ReplaceAll(ready, "'", `'\''`) + "'"}
	if g.cfg.WindowManagerConfig != "" {
		args = append(args, "--config-file", g.cfg.WindowManagerConfig)
	}
	p, err := g.spawn("wm", path, args, nil, nil)
	if err != nil {
		return err
	}
	if err := g.waitFile(ctx, p, "window manager to finish starting", ready); err != nil {
		return err
	}
	_, err = g.waitX(ctx, p, "window manager to take the screen", "")
	return err
}

func (g *Guest) startApp(ctx context.Context, a App, path string) error {
	p, err := g.spawn(a.Name, path, a.Args, a.Env, nil)
	if err != nil {
		return err
	}
	var win image.Rectangle
	if a.WindowClass != "" {
		if win, err = g.waitX(ctx, p, "window of class "+a.WindowClass, a.WindowClass); err != nil {
			return err
		}
	}
	if a.Ready != nil {
		if err := g.watch(ctx, p, a.Ready, win); err != nil {
			return p.failure("did not get ready", err)
		}
	}
	return nil
}

// watch runs ready, but returns early if p exits meanwhile.
func (g *Guest) watch(ctx context.Context, p *proc, ready func(context.Context, image.Rectangle) error, win image.Rectangle) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ready(ctx, win) }()
	select {
	case err := <-errc:
		return err
	case <-p.exited:
		cancel()
		<-errc
		return fmt.Errorf("exited: %w", p.exitErr())
	}
}

// waitFile polls until path exists, p exits, or ctx ends.
func (g *Guest) waitFile(ctx context.Context, p *proc, what, path string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.failure("exited while waiting for the "+what, p.exitErr())
		case <-ctx.Done():
			return p.failure("waiting for the "+what, ctx.Err())
		case <-tick.C:
		}
	}
}

// waitX waits until the display has a window manager (class "") or a
// viewable window of class, and returns that window's rectangle; it gives
// up when p exits or ctx ends.
func (g *Guest) waitX(ctx context.Context, p *proc, what, class string) (image.Rectangle, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		win image.Rectangle
		err error
	}
	done := make(chan result, 1)
	go func() {
		win, err := g.xwait(ctx, class, true)
		done <- result{win, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return r.win, p.failure("waiting for the "+what, r.err)
		}
		return r.win, nil
	case <-p.exited:
		cancel()
		<-done
		return image.Rectangle{}, p.failure("exited while waiting for the "+what, p.exitErr())
	}
}

// xwait looks at the display through `agentd x-wait`, once or (wait) until
// ctx's deadline. The X client is agentd, the guest's own program, so this
// host-side package links no X library (docs/design.md, "The tree").
func (g *Guest) xwait(ctx context.Context, class string, wait bool) (image.Rectangle, error) {
	args := []string{"x-wait", "--display", g.Display, "--xauthority", g.Xauthority}
	if class != "" {
		args = append(args, "--window-class", class)
	}
	if wait {
		timeout := DefaultStartTimeout
		if deadline, ok := ctx.Deadline(); ok {
			timeout = time.Until(deadline)
		}
		args = append(args, "--timeout", timeout.String())
	}
	cmd := exec.CommandContext(ctx, g.agentdPath, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return image.Rectangle{}, fmt.Errorf("%s: %w", strings.TrimPrefix(msg, "agentd: "), err)
		}
		return image.Rectangle{}, fmt.Errorf("agentd x-wait: %w", err)
	}
	if class == "" {
		return image.Rectangle{}, nil
	}
	var x, y, w, h int
	if _, err := fmt.Sscan(stdout.String(), &x, &y, &w, &h); err != nil {
		return image.Rectangle{}, fmt.Errorf("agentd x-wait printed %q: %w", stdout.String(), err)
	}
	return image.Rect(x, y, x+w, y+h), nil
}

func (g *Guest) startAgentd(ctx context.Context, path string) error {
	g.TokenFile = filepath.Join(g.StateDir, "token")
	if err := statedir.WriteToken(g.TokenFile); err != nil {
		return err
	}
	addrFile := filepath.Join(g.StateDir, "agentd.addr")
	args := append([]string{"--display", g.Display, "--listen", "127.0.0.1:0",
		"--token-file", g.TokenFile, "--addr-file", addrFile}, g.cfg.AgentdArgs...)
	p, err := g.spawn("agentd", path, args, nil, nil)
	if err != nil {
		return err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no address written yet"
	for {
		if addr, ok := readAddr(addrFile); ok {
			g.Addr = addr
			err := healthz.Probe(ctx, addr)
			if err == nil {
				return nil
			}
			last = err.Error()
		}
		select {
		case <-p.exited:
			return p.failure("exited before it was healthy", p.exitErr())
		case <-ctx.Done():
			return p.failure("not healthy", fmt.Errorf("%w (last: %s)", ctx.Err(), last))
		case <-tick.C:
		}
	}
}

// readAddr reads agentd's --addr-file; agentd writes it atomically, but a
// foreign agentd might not, so only a complete host:port counts.
func readAddr(path string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	addr := strings.TrimSpace(string(data))
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" || port == "0" {
		return "", false
	}
	return addr, true
}

// Health asks agentd's /healthz: nil when it answers 200 (see healthz).
func (g *Guest) Health(ctx context.Context) error { return healthz.Probe(ctx, g.Addr) }

// Env returns DISPLAY and XAUTHORITY for running an X client (xdotool,
// xwininfo) against this guest.
func (g *Guest) Env() []string {
	return []string{"DISPLAY=" + g.Display, "XAUTHORITY=" + g.Xauthority}
}

// Window returns the screen rectangle of the viewable top-level window whose
// WM_CLASS class is class.
func (g *Guest) Window(class string) (image.Rectangle, error) {
	return g.xwait(context.Background(), class, false)
}

// Failed is closed when a process of the guest exits before Down; Err says
// which and why.
func (g *Guest) Failed() <-chan struct{} { return g.failed }

// isDown reports whether Down has begun: the guest no longer runs, though
// its processes may not be gone yet.
func (g *Guest) isDown() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopping
}

// Err returns why the guest failed, or nil while it runs.
func (g *Guest) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failErr
}

// exitedEarly records the first process that exited on its own.
func (g *Guest) exitedEarly(p *proc) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopping || g.failErr != nil {
		return
	}
	g.failErr = p.failure("exited", p.exitErr())
	close(g.failed)
}

// Down stops every process of the guest (SIGTERM, then SIGKILL after the
// grace period or once ctx ends), waits for each, and removes what they
// left: X lock and socket, shared memory segments, the state directory
// (logs stay if KeepLogs). It is safe to call more than once.
func (g *Guest) Down(ctx context.Context) error {
	g.downOnce.Do(func() { g.downErr = g.down(ctx) })
	return g.downErr
}

func (g *Guest) down(ctx context.Context) error {
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
	// Shared memory is attributed by creator pid, so note the pids while
	// the processes still exist.
	pids := markedProcesses(g.marker)
	var errs []error
	for i := len(g.procs) - 1; i >= 0; i-- {
		if err := g.procs[i].stop(ctx, g.cfg.StopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	// Helpers that left their process group (setsid) still carry the marker.
	if left := killMarked(g.marker); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes still running after teardown: %v", left))
	}
	for _, p := range g.procs {
		pids = append(pids, p.pid)
	}
	if err := removeSharedMemory(pids); err != nil {
		errs = append(errs, err)
	}
	if g.Display != "" {
		if err := removeXFiles(g.displayNo, g.procs[0].pid); err != nil {
			errs = append(errs, err)
		}
	}
	if err := g.removeState(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("local guest %s down: %w", g.Display, errors.Join(errs...))
	}
	return nil
}

func (g *Guest) removeState() error {
	if !g.cfg.KeepLogs {
		return os.RemoveAll(g.StateDir)
	}
	entries, err := os.ReadDir(g.StateDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != "logs" {
			errs = append(errs, os.RemoveAll(filepath.Join(g.StateDir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// env is the environment of every child: nothing is inherited but PATH, so
// a guest never talks to the developer's session (D-Bus, Wayland, their
// X display, their home directory).
func (g *Guest) env(extra []string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	home := filepath.Join(g.StateDir, "home")
	env := []string{
		"PATH=" + path,
		"LANG=C.UTF-8",
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_RUNTIME_DIR=" + filepath.Join(g.StateDir, "runtime"),
		"TMPDIR=" + filepath.Join(g.StateDir, "tmp"),
		// No session bus: GLib would otherwise autolaunch a dbus-daemon
		// that outlives the guest; no accessibility bus either.
		"DBUS_SESSION_BUS_ADDRESS=disabled:",
		"NO_AT_BRIDGE=1",
		"GDK_BACKEND=x11",
		markerEnv + "=" + g.marker,
	}
	if g.Display != "" {
		env = append(env, "DISPLAY="+g.Display, "XAUTHORITY="+g.Xauthority)
	}
	return append(env, extra...) // os/exec keeps the last value of a duplicate
}

// writeNewFile creates path with mode 0600; it fails if path exists, so a
// planted file or symlink is never written through.
func writeNewFile(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
