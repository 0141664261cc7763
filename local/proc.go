package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// groupGoneTimeout bounds the wait for a process group's last members after
// its leader was reaped and the group got SIGKILL.
const groupGoneTimeout = 3 * time.Second

// proc is one child of a guest, leader of its own process group.
type proc struct {
	name string
	pid  int
	cmd  *exec.Cmd
	log  string

	exited chan struct{} // closed once the process has exited (not yet reaped)
	done   chan struct{} // closed once reaped; err is set
	err    error
}

// spawn starts a child with its output in logs/<name>.log. fd3, if set, is
// passed as file descriptor 3.
func (g *Guest) spawn(name, path string, args, env []string, fd3 *os.File) (*proc, error) {
	logPath := g.logPath(name)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log: %w", name, err)
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(path, args...)
	cmd.Env = g.env(env)
	cmd.Dir = filepath.Join(g.StateDir, "home")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if fd3 != nil {
		cmd.ExtraFiles = []*os.File{fd3}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	p := &proc{name: name, pid: cmd.Process.Pid, cmd: cmd, log: logPath,
		exited: make(chan struct{}), done: make(chan struct{})}
	g.procs = append(g.procs, p)
	go p.monitor(g)
	return p, nil
}

// monitor waits for the process to exit, kills what is left of its group,
// and reaps it. The group is killed before the reap because the unreaped
// leader keeps its pid, and so the group id, from being reused.
func (p *proc) monitor(g *Guest) {
	waitExited(p.pid)
	close(p.exited)
	signalGroup(p.pid, syscall.SIGKILL)
	p.err = p.cmd.Wait()
	close(p.done)
	g.exitedEarly(p)
}

// exitErr waits until the process is reaped and describes how it ended.
func (p *proc) exitErr() error {
	<-p.done
	if p.err == nil {
		return errors.New("exit status 0")
	}
	return p.err
}

// stop ends the process group: SIGTERM, then SIGKILL after grace or once
// ctx ends; it returns when the leader is reaped and no member is left.
func (p *proc) stop(ctx context.Context, grace time.Duration) error {
	select {
	case <-p.exited:
	default:
		signalGroup(p.pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			signalGroup(p.pid, syscall.SIGKILL)
		case <-ctx.Done():
			signalGroup(p.pid, syscall.SIGKILL)
		}
	}
	<-p.done
	deadline := time.Now().Add(groupGoneTimeout)
	for {
		left := groupMembers(p.pid)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: processes of its group still running: %v", p.name, left)
		}
		signalGroup(p.pid, syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
	}
}

// failure is an error about p that ends with the last lines of its log.
func (p *proc) failure(what string, err error) error {
	return fmt.Errorf("%s %s: %w\n%s", p.name, what, err, logTail(p.log, 15))
}

// logTail formats the last n lines of a log for an error message.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(data, []byte("?"))), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "--- " + path + " is empty ---"
	}
	return "--- last lines of " + path + " ---\n" + strings.Join(lines, "\n")
}
