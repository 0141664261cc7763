package local

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
	"strconv"
	"syscall"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
)

// A named local guest outlives the program that started it: Up starts a
// supervisor (this program again, with SupervisorArgs, in a session of its
// own) that owns the desktop's processes, holds an flock on <dir>/lock
// while it lives and reports the guest's description on a pipe once it is
// healthy. Down sends it SIGTERM; it tears the guest down, removes <dir>
// and exits. If the supervisor dies, its children get SIGTERM from the
// kernel (Config's Pdeathsig).

// SupervisorArgs are the arguments with which this program runs Supervise
// (agentctl: "guest", "supervise"); nil: it cannot start named guests.
var SupervisorArgs []string

// Bounds of starting and stopping a supervised guest; Up has its own bound
// inside. After downTimeout the supervisor is killed, and the kernel sends
// its children SIGTERM.
const (
	upTimeout   = 3 * time.Minute
	downTimeout = 60 * time.Second
)

// supervisorReport is the one line the supervisor writes on its report pipe.
type supervisorReport struct {
	Guest *backend.Description `json:"guest,omitempty"`
	Error string               `json:"error,omitempty"`
}

// startSupervisor starts the supervisor of a named guest and waits for its
// report.
func startSupervisor(ctx context.Context, spec backend.Spec) (backend.Instance, error) {
	if SupervisorArgs == nil {
		return nil, errors.New("local guest: this program cannot supervise a named guest")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(spec.Dir, "supervisor.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("supervisor log: %w", err)
	}
	defer logf.Close()
	ready, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ready.Close()
	args := append(append([]string{}, SupervisorArgs...), "--report-fd", "3", "--name", spec.Name,
		"--size", fmt.Sprintf("%dx%d", spec.Width, spec.Height), "--apps", spec.AppsName(), "--agentd", spec.AgentdPath)
	if spec.KeepLogs {
		args = append(args, "--keep-logs")
	}
	if spec.Code {
		args = append(args, "--code")
	}
	if spec.Browser {
		args = append(args, "--browser")
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{readyW} // fd 3: the supervisor reports there
	// A session of its own: the guest survives this terminal and its ^C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		readyW.Close()
		return nil, fmt.Errorf("start supervisor: %w", err)
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
		return nil, ctx.Err()
	}
	if rep.Error != "" || rep.Guest == nil {
		_ = cmd.Wait()
		msg := rep.Error
		if msg == "" {
			msg = "the supervisor exited without a report; see " + filepath.Join(spec.Dir, "supervisor.log")
		}
		return nil, errors.New(msg)
	}
	_ = cmd.Process.Release() // it outlives us
	return &supervised{dir: spec.Dir, desc: *rep.Guest}, nil
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

func writeReport(f *os.File, rep supervisorReport) {
	if f == nil {
		return
	}
	data, _ := json.Marshal(rep)
	_, _ = f.Write(append(data, '\n'))
	_ = f.Close()
}

// Supervise runs a named guest until SIGTERM (ctx ends) or until one of
// its processes dies, then tears it down and removes its directory. args
// are the flags startSupervisor passes.
func Supervise(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("supervise", flag.ContinueOnError)
	reportFD := fs.Int("report-fd", -1, "file descriptor to write the one-line JSON report to")
	name := fs.String("name", "", "guest name")
	size := fs.String("size", "", "screen size WIDTHxHEIGHT")
	apps := fs.String("apps", "none", "the desktop's name")
	agentd := fs.String("agentd", "", "agentd binary")
	keepLogs := fs.Bool("keep-logs", false, "keep the logs after down")
	code := fs.Bool("code", false, "start agentd with --code")
	browser := fs.Bool("browser", false, "start agentd with --browser")
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
	spec := backend.Spec{Name: *name, AgentdPath: *agentd, KeepLogs: *keepLogs, Code: *code, Browser: *browser}
	if _, err := fmt.Sscanf(*size, "%dx%d", &spec.Width, &spec.Height); err != nil {
		return fail(fmt.Errorf("--size %q: %w", *size, err))
	}
	var err error
	if spec.Desktop, err = backend.LookupDesktop(*apps); err != nil {
		return fail(err)
	}
	dir, err := backend.Dir(*name)
	if err != nil {
		return fail(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fail(fmt.Errorf("lock: %w", err))
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(fmt.Errorf("guest %q is already supervised: %w", *name, err))
	}

	inst, err := upIn(ctx, spec, dir)
	if err != nil {
		removeGuestDir(dir, *keepLogs)
		return fail(err)
	}
	inst.work = ""
	inst.desc.PID = os.Getpid()
	inst.desc.Owner = "supervisor pid " + strconv.Itoa(os.Getpid())
	writeReport(report, supervisorReport{Guest: &inst.desc})
	fmt.Fprintf(os.Stderr, "guest %q up: display %s, agentd %s\n", *name, inst.g.Display, inst.g.Addr)

	var runErr error
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "stopping on request")
	case <-inst.g.Failed():
		runErr = inst.g.Err()
		fmt.Fprintf(os.Stderr, "guest failed: %v\n", runErr)
	}
	downCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inst.Down(downCtx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	removeGuestDir(dir, *keepLogs)
	return runErr
}

// removeGuestDir removes a guest's directory; with keepLogs only the logs
// (supervisor.log, desktop/logs) stay.
func removeGuestDir(dir string, keepLogs bool) {
	if !keepLogs {
		_ = os.RemoveAll(dir)
		return
	}
	for _, f := range []string{"guest.json", "lock", "apps"} {
		_ = os.RemoveAll(filepath.Join(dir, f))
	}
}

// supervised is a named local guest, reached through its supervisor.
type supervised struct {
	dir  string
	desc backend.Description
}

func (s *supervised) Describe() backend.Description { return s.desc }

func (s *supervised) Status(ctx context.Context) backend.Status {
	switch {
	case !supervisorAlive(s.dir):
		return backend.Status{Health: "-"}
	case s.desc.Addr == "":
		return backend.Status{Running: true, Health: "starting"}
	}
	return backend.Status{Running: true, Health: healthz.Describe(healthz.Probe(ctx, s.desc.Addr))}
}

// Down asks the supervisor to stop the guest and waits until it has; a
// guest whose supervisor is gone has nothing left to stop.
func (s *supervised) Down(ctx context.Context) error {
	if !supervisorAlive(s.dir) {
		return nil
	}
	if s.desc.PID == 0 {
		return errors.New("the guest is still starting: try again")
	}
	if err := syscall.Kill(s.desc.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal the supervisor (pid %d): %w", s.desc.PID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, downTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for supervisorAlive(s.dir) {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(s.desc.PID, syscall.SIGKILL)
			return fmt.Errorf("the supervisor did not stop within %v (%w); killed it, its processes got SIGTERM", downTimeout, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

func (s *supervised) Close() error { return nil }

func (s *supervised) ReadFile(_ context.Context, rel string) ([]byte, error) {
	return readIn(s.desc.Home, rel)
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
