package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/exercise"
	"github.com/agentd-dev/agentd/internal/healthz"
	"github.com/agentd-dev/agentd/internal/statedir"
	"github.com/agentd-dev/agentd/local"
)

func init() {
	register("guest", "start, stop or show a guest desktop", runGuest)
}

// A guest started by 'agentctl guest up' outlives the command: up starts a
// supervisor ('agentctl guest supervise', in a session of its own) that owns
// the desktop's processes, holds an flock on <dir>/lock while it lives and
// writes <dir>/guest.json once the guest is healthy. 'down' sends it SIGTERM;
// it tears the guest down, removes <dir> and exits. If the supervisor dies,
// its children get SIGTERM from the kernel (local.Config's Pdeathsig).

const guestUsage = `usage: agentctl guest <up|down|status> [flags]

  up      start a guest desktop that keeps running after the command
  down    stop a guest and remove everything it left
  status  show guests: backend, display, agentd address, token file, health

Run 'agentctl guest <command> -h' for its flags.`

const defaultGuestName = "default"

func runGuest(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, guestUsage)
		return errors.New("missing guest command")
	}
	switch args[0] {
	case "up":
		return guestUp(ctx, args[1:])
	case "down":
		return guestDown(ctx, args[1:])
	case "status":
		return guestStatus(ctx, args[1:])
	case "supervise":
		return guestSupervise(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(os.Stderr, guestUsage)
		return nil
	}
	fmt.Fprintln(os.Stderr, guestUsage)
	return fmt.Errorf("unknown guest command %q", args[0])
}

// guestState is <dir>/guest.json, written by the supervisor.
type guestState struct {
	Name       string    `json:"name"`
	Backend    string    `json:"backend"`
	PID        int       `json:"pid"` // the supervisor's
	Display    string    `json:"display"`
	Addr       string    `json:"addr"`
	TokenFile  string    `json:"token_file"`
	Xauthority string    `json:"xauthority,omitempty"`
	Instance   string    `json:"instance,omitempty"` // a Docker guest's container, a VM guest's Lima instance
	Apps       string    `json:"apps"`
	FormURL    string    `json:"form_url,omitempty"`
	RecordFile string    `json:"record_file,omitempty"`
	NoteFile   string    `json:"note_file,omitempty"`
	Started    time.Time `json:"started"`
}

// upOptions are the flags of up, passed on to supervise.
type upOptions struct {
	backend  string
	name     string
	size     string
	apps     string
	agentd   string
	keepLogs bool
	network  bool
	code     bool
}

func (o *upOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.backend, "backend", "local", "where the guest runs: local (this machine's Xvfb), docker (a hardened container) or vm (a Lima VM)")
	fs.StringVar(&o.name, "name", defaultGuestName, "guest name")
	fs.StringVar(&o.size, "size", fmt.Sprintf("%dx%d", local.DefaultWidth, local.DefaultHeight), "screen size WIDTHxHEIGHT")
	fs.StringVar(&o.apps, "apps", "none", "applications: exercise (browser with the pickup form, text editor), desktop (browser and editor; docker only) or none")
	fs.StringVar(&o.agentd, "agentd", "", "agentd binary of a local guest (default: next to agentctl, else on $PATH)")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep a local guest's logs after down")
	fs.BoolVar(&o.network, "network", false, "give a docker guest a network (default: none; agentd is then also published on 127.0.0.1)")
	fs.BoolVar(&o.code, "code", false, "start agentd with --code: Python code execution for agentctl exec and code mode (local guests)")
}

func (o *upOptions) args() []string {
	a := []string{"--backend", o.backend, "--name", o.name, "--size", o.size, "--apps", o.apps, "--agentd", o.agentd}
	if o.keepLogs {
		a = append(a, "--keep-logs")
	}
	if o.code {
		a = append(a, "--code")
	}
	return a
}

// check validates the options and returns the screen size.
func (o *upOptions) check() (w, h int, err error) {
	switch o.backend {
	case "local", "docker", "vm":
	default:
		return 0, 0, fmt.Errorf("unknown backend %q: use local, docker or vm", o.backend)
	}
	if o.network && o.backend != "docker" {
		return 0, 0, errors.New("--network is for --backend docker: a local guest shares this machine's network")
	}
	if o.code && o.backend != "local" {
		return 0, 0, errors.New("--code is for --backend local so far: the docker and vm guests do not start agentd with it yet")
	}
	if err := checkGuestName(o.name); err != nil {
		return 0, 0, err
	}
	w, h, err = parseSize(o.size)
	if err != nil {
		return 0, 0, err
	}
	switch o.apps {
	case "none":
	case "desktop":
		if o.backend == "local" {
			return 0, 0, errors.New("--apps desktop is for docker and vm guests: a local guest uses this machine's applications")
		}
	case "exercise":
		if w != exercise.ScreenWidth || h != exercise.ScreenHeight {
			return 0, 0, fmt.Errorf("--apps exercise needs --size %dx%d: its layout is fixed", exercise.ScreenWidth, exercise.ScreenHeight)
		}
	default:
		return 0, 0, fmt.Errorf("--apps %q: use exercise, desktop or none", o.apps)
	}
	return w, h, nil
}

var guestNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

func checkGuestName(name string) error {
	if !guestNameRE.MatchString(name) {
		return fmt.Errorf("guest name %q: use 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	switch name {
	case "local", "docker", "vm":
		// 'agentctl run --guest docker' means a fresh container.
		return fmt.Errorf("guest name %q is reserved: it names a backend", name)
	}
	return nil
}

func parseSize(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(s, "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 64 || h < 64 || w > 8192 || h > 8192 {
		return 0, 0, fmt.Errorf("--size %q: want WIDTHxHEIGHT, each 64..8192, e.g. 1440x900", s)
	}
	return w, h, nil
}

// guestsDir returns the private directory holding one directory per guest.
func guestsDir() (string, error) {
	root, err := local.StateRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "guests")
	if err := statedir.Ensure(dir); err != nil {
		return "", err
	}
	return dir, nil
}

func guestDir(name string) (string, error) {
	if err := checkGuestName(name); err != nil {
		return "", err
	}
	dir, err := guestsDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// supervisorAlive reports whether a supervisor holds dir's lock.
func supervisorAlive(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

func readGuestState(dir string) (guestState, error) {
	var st guestState
	data, err := os.ReadFile(filepath.Join(dir, "guest.json"))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %w", filepath.Join(dir, "guest.json"), err)
	}
	return st, nil
}

// upTimeout bounds 'guest up' as a whole; local.Up has its own bound inside.
const upTimeout = 3 * time.Minute

func guestUp(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest up", flag.ContinueOnError)
	var o upOptions
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("guest up: unexpected arguments %q", fs.Args())
	}
	if _, _, err := o.check(); err != nil {
		return err
	}
	dir, err := guestDir(o.name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		if running, _ := guestRunning(ctx, dir); running {
			return fmt.Errorf("guest %q is already running ('agentctl guest status --name %s')", o.name, o.name)
		}
		if err := removeStale(ctx, dir); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("guest directory: %w", err)
	}
	if up := remoteUp[o.backend]; up != nil {
		start := time.Now()
		fmt.Printf("starting %s guest %q (%s)\n", o.backend, o.name, firstTime[o.backend])
		st, err := up(ctx, o, dir)
		if err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("guest %q did not come up: %w", o.name, err)
		}
		printUp(st, time.Since(start))
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find agentctl itself: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "supervisor.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("supervisor log: %w", err)
	}
	defer logf.Close()
	ready, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer ready.Close()
	start := time.Now()
	cmd := exec.Command(self, append([]string{"guest", "supervise", "--report-fd", "3"}, o.args()...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{readyW} // fd 3: the supervisor reports there
	// A session of its own: the guest survives this terminal and its ^C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		readyW.Close()
		os.RemoveAll(dir)
		return fmt.Errorf("start supervisor: %w", err)
	}
	readyW.Close()

	report := make(chan supervisorReport, 1)
	go func() { report <- readReport(ready) }()
	ctx, cancel := context.WithTimeout(ctx, upTimeout)
	defer cancel()
	var rep supervisorReport
	select {
	case rep = <-report:
	case <-ctx.Done():
		// The supervisor tears down what it started on SIGTERM.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		return fmt.Errorf("guest %q did not come up: %w", o.name, ctx.Err())
	}
	if rep.Error != "" || rep.State == nil {
		_ = cmd.Wait()
		msg := rep.Error
		if msg == "" {
			msg = "the supervisor exited without a report; see " + filepath.Join(dir, "supervisor.log")
		}
		return fmt.Errorf("guest %q did not come up: %s", o.name, msg)
	}
	_ = cmd.Process.Release() // it outlives us
	printUp(*rep.State, time.Since(start))
	return nil
}

func printUp(st guestState, took time.Duration) {
	fmt.Printf("guest %q is up (%s, display %s) in %.1fs\n", st.Name, st.Backend, st.Display, took.Seconds())
	printGuest(os.Stdout, st)
	fmt.Printf("use it with:\n  export AGENTD_ADDR=%s AGENTD_TOKEN_FILE=%s\nor pass --guest %s to agentctl run, act and screenshot\nstop it with:\n  agentctl guest down --name %s\n",
		st.Addr, st.TokenFile, st.Name, st.Name)
}

// Docker and VM guests need no supervisor: the engine or Lima keeps them.
var (
	remoteUp = map[string]func(context.Context, upOptions, string) (guestState, error){
		"docker": dockerUp, "vm": vmUp,
	}
	remoteDown = map[string]func(context.Context, guestState) error{
		"docker": dockerDown, "vm": vmDown,
	}
	remoteStatus = map[string]func(context.Context, guestState) (bool, string){
		"docker": dockerStatus, "vm": vmStatus,
	}
	firstTime = map[string]string{
		"docker": "building the image first if it is missing: minutes the first time",
		"vm":     "the first start downloads Debian's cloud image and installs the desktop: minutes",
	}
)

// guestRunning reports whether the guest recorded in dir runs: its
// supervisor holds the lock (local), or its container or VM runs.
func guestRunning(ctx context.Context, dir string) (bool, guestState) {
	st, err := readGuestState(dir)
	if status := remoteStatus[st.Backend]; err == nil && status != nil {
		running, _ := status(ctx, st)
		return running, st
	}
	return supervisorAlive(dir), st
}

// removeStale removes what a guest that no longer runs left: a killed
// supervisor's directory, an exited container or a stopped VM.
func removeStale(ctx context.Context, dir string) error {
	if st, err := readGuestState(dir); err == nil && remoteDown[st.Backend] != nil {
		if err := remoteDown[st.Backend](ctx, st); err != nil {
			return fmt.Errorf("remove the stale %s guest %s: %w", st.Backend, st.Instance, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove stale guest state: %w", err)
	}
	return nil
}

// supervisorReport is the one line the supervisor writes on fd 3.
type supervisorReport struct {
	State *guestState `json:"state,omitempty"`
	Error string      `json:"error,omitempty"`
}

func readReport(r io.Reader) supervisorReport {
	var rep supervisorReport
	line, _ := bufio.NewReader(io.LimitReader(r, 1<<20)).ReadBytes('\n')
	if len(line) == 0 {
		return rep // EOF: the supervisor died before reporting
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		rep.Error = "unreadable supervisor report: " + err.Error()
	}
	return rep
}

func printGuest(w io.Writer, st guestState) {
	fmt.Fprintf(w, "  address:    %s\n  token file: %s\n", st.Addr, st.TokenFile)
	if st.Apps == "exercise" {
		fmt.Fprintf(w, "  form:       %s\n  records:    %s\n  note:       %s\n", st.FormURL, st.RecordFile, st.NoteFile)
	}
}

// guestSupervise runs the guest until SIGTERM (from 'guest down') or until
// one of its processes dies, then tears it down and removes its directory.
func guestSupervise(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest supervise", flag.ContinueOnError)
	var o upOptions
	o.register(fs)
	reportFD := fs.Int("report-fd", -1, "file descriptor to write the one-line JSON report to (set by up)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var report *os.File
	if *reportFD >= 0 {
		report = os.NewFile(uintptr(*reportFD), "report")
	}
	fail := func(err error) error {
		writeReport(report, supervisorReport{Error: err.Error()})
		return err
	}
	w, h, err := o.check()
	if err != nil {
		return fail(err)
	}
	dir, err := guestDir(o.name)
	if err != nil {
		return fail(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fail(fmt.Errorf("lock: %w", err))
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(fmt.Errorf("guest %q is already supervised: %w", o.name, err))
	}

	cfg := local.Config{StateDir: filepath.Join(dir, "desktop"), Width: w, Height: h, AgentdPath: o.agentd, KeepLogs: o.keepLogs}
	if o.code {
		cfg.AgentdArgs = append(cfg.AgentdArgs, "--code")
	}
	var desk *exercise.Desktop
	if o.apps == "exercise" {
		if desk, err = exercise.Prepare(exercise.Config{Dir: filepath.Join(dir, "exercise")}); err != nil {
			removeGuestDir(dir, o.keepLogs)
			return fail(err)
		}
		desk.Configure(&cfg)
	}
	closeDesk := func() {
		if desk != nil {
			if err := desk.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "close exercise desktop: %v\n", err)
			}
		}
	}
	g, err := local.Up(ctx, cfg)
	if err != nil {
		closeDesk()
		removeGuestDir(dir, o.keepLogs)
		return fail(err)
	}
	st := guestState{
		Name: o.name, Backend: o.backend, PID: os.Getpid(), Display: g.Display, Addr: g.Addr,
		TokenFile: g.TokenFile, Xauthority: g.Xauthority, Apps: o.apps, Started: time.Now().UTC(),
	}
	if desk != nil {
		st.FormURL, st.RecordFile, st.NoteFile = desk.Record.URL(), desk.Record.RecordFile(), desk.NoteFile
	}
	if err := writeGuestState(dir, st); err != nil {
		_ = g.Down(context.Background())
		closeDesk()
		removeGuestDir(dir, o.keepLogs)
		return fail(err)
	}
	writeReport(report, supervisorReport{State: &st})
	fmt.Fprintf(os.Stderr, "guest %q up: display %s, agentd %s\n", o.name, g.Display, g.Addr)

	var runErr error
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "stopping on request")
	case <-g.Failed():
		runErr = g.Err()
		fmt.Fprintf(os.Stderr, "guest failed: %v\n", runErr)
	}
	downCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Down(downCtx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	closeDesk()
	removeGuestDir(dir, o.keepLogs)
	return runErr
}

func writeReport(f *os.File, rep supervisorReport) {
	if f == nil {
		return
	}
	data, _ := json.Marshal(rep)
	_, _ = f.Write(append(data, '\n'))
	_ = f.Close()
}

func writeGuestState(dir string, st guestState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "guest.json.tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("guest state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, "guest.json"))
}

// removeGuestDir removes a guest's directory; with keepLogs only the logs
// (supervisor.log, desktop/logs) stay.
func removeGuestDir(dir string, keepLogs bool) {
	if !keepLogs {
		_ = os.RemoveAll(dir)
		return
	}
	for _, f := range []string{"guest.json", "lock", "exercise"} {
		_ = os.RemoveAll(filepath.Join(dir, f))
	}
}

// downTimeout bounds the wait for the supervisor; after it, the supervisor
// is killed, and the kernel sends its children SIGTERM.
const downTimeout = 60 * time.Second

func guestDown(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest down", flag.ContinueOnError)
	name := fs.String("name", defaultGuestName, "guest name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := guestDir(*name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no guest named %q ('agentctl guest status' lists them)", *name)
	}
	running, st := guestRunning(ctx, dir)
	if !running {
		if err := removeStale(ctx, dir); err != nil {
			return err
		}
		fmt.Printf("guest %q was not running; removed its stale state\n", *name)
		return nil
	}
	if down := remoteDown[st.Backend]; down != nil {
		start := time.Now()
		if err := down(ctx, st); err != nil {
			return fmt.Errorf("guest %q: %w", *name, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("guest %q: remove its state: %w", *name, err)
		}
		fmt.Printf("guest %q is down (%.1fs)\n", *name, time.Since(start).Seconds())
		return nil
	}
	st, err = readGuestState(dir)
	if err != nil {
		return fmt.Errorf("guest %q is still starting or its state is unreadable (%w): try again", *name, err)
	}
	start := time.Now()
	if err := syscall.Kill(st.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal the supervisor (pid %d): %w", st.PID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, downTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for supervisorAlive(dir) {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
			return fmt.Errorf("guest %q: the supervisor did not stop within %v (%w); killed it, its processes got SIGTERM", *name, downTimeout, ctx.Err())
		case <-tick.C:
		}
	}
	fmt.Printf("guest %q is down (%.1fs)\n", *name, time.Since(start).Seconds())
	return nil
}

func guestStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest status", flag.ContinueOnError)
	name := fs.String("name", "", "guest name (default: every guest)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := guestsDir()
	if err != nil {
		return err
	}
	var names []string
	if *name != "" {
		if err := checkGuestName(*name); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(root, *name)); err != nil {
			return fmt.Errorf("no guest named %q", *name)
		}
		names = []string{*name}
	} else {
		entries, err := os.ReadDir(root)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
	}
	type status struct {
		guestState
		Running bool   `json:"running"`
		Health  string `json:"health"`
	}
	var out []status
	for _, n := range names {
		dir := filepath.Join(root, n)
		s := status{guestState: guestState{Name: n}, Running: supervisorAlive(dir), Health: "-"}
		if st, err := readGuestState(dir); err == nil {
			s.guestState = st
		}
		switch {
		case remoteStatus[s.Backend] != nil:
			s.Running, s.Health = remoteStatus[s.Backend](ctx, s.guestState)
		case s.Running && s.Addr != "":
			s.Health = healthz.Describe(healthz.Probe(ctx, s.Addr))
		}
		out = append(out, s)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(out) == 0 {
		fmt.Println("no guests ('agentctl guest up' starts one)")
	}
	for _, s := range out {
		switch {
		case !s.Running:
			fmt.Printf("%s: not running (state or kept logs left in %s: 'agentctl guest down --name %s' removes them)\n",
				s.Name, filepath.Join(root, s.Name), s.Name)
			continue
		case s.Addr == "":
			fmt.Printf("%s: starting\n", s.Name)
			continue
		}
		owner := fmt.Sprintf("supervisor pid %d", s.PID)
		switch s.Backend {
		case "docker":
			owner = "container " + s.Instance
		case "vm":
			owner = "Lima instance " + s.Instance
		}
		fmt.Printf("%s: running (%s, display %s, %s, up %s), health: %s\n",
			s.Name, s.Backend, s.Display, owner, time.Since(s.Started).Round(time.Second), s.Health)
		printGuest(os.Stdout, s.guestState)
	}
	return nil
}
