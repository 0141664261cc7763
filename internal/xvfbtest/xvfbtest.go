// Package xvfbtest starts a private Xvfb for tests and benchmarks.
//
// Xvfb chooses its own free display number (-displayfd), so tests that run in
// parallel, or next to a developer's desktop, never collide.
package xvfbtest

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/prereq"

	"golang.org/x/sys/unix"
)

// Server is a running Xvfb owned by one test.
type Server struct {
	Display string // e.g. ":42"
	Width   int
	Height  int
	cmd     *exec.Cmd
	// exited is closed when a server's process started on a chosen
	// display has been waited for (Launch's are waited for by Stop).
	exited chan struct{}
	// reserved is the socket holding the display number between Down and
	// Restart; 0 when none.
	reserved int
}

// Start launches Xvfb at width×height×24 and stops it when tb ends.
// The test is skipped, not failed, only when Xvfb is not installed and
// AGENTD_REQUIRE_X is unset; CI sets it so a missing install fails loudly.
func Start(tb testing.TB, width, height int) *Server {
	tb.Helper()
	s, err := Launch(width, height)
	if err != nil {
		if _, lookErr := exec.LookPath("Xvfb"); lookErr != nil {
			prereq.Missing(tb, prereq.X, "Xvfb is not installed: %v", lookErr)
		}
		tb.Fatalf("start Xvfb: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Launch starts Xvfb without a testing.TB (for bench commands). Call Stop.
func Launch(width, height int) (*Server, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0",
		fmt.Sprintf("%dx%dx24", width, height), "-nolisten", "tcp", "-noreset")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	w.Close()
	done := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		done <- strings.TrimSpace(line)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	select {
	case line := <-done:
		n, err := strconv.Atoi(line)
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("Xvfb did not report a display (got %q)", line)
		}
		return &Server{Display: ":" + strconv.Itoa(n), Width: width, Height: height, cmd: cmd}, nil
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("Xvfb did not start within 15s")
	}
}

// Down stops the server and keeps its display number reserved until
// Restart, so that an Xvfb picking a free number (another test's) does not
// take it. Xvfb -displayfd ignores lock files, but skips a number whose
// abstract socket (Linux) is taken: this process binds that name without
// listening, so clients connecting meanwhile are refused at once, as they
// are by a display that is gone.
func (s *Server) Down() error {
	s.Stop()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return fmt.Errorf("reserve display %s: %w", s.Display, err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@/tmp/.X11-unix/X" + strings.TrimPrefix(s.Display, ":")}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("reserve display %s: %w", s.Display, err)
	}
	s.reserved = fd
	return nil
}

// StartRestartable is Start for a test that takes the server Down and
// Restarts it. Its display number is drawn at random far above those
// -displayfd picks (the lowest free one): between Restart giving up Down's
// reservation and the new Xvfb binding the number, another test's Xvfb
// starting would take a low number back (CI: "restarted Xvfb :0 exited at
// start"), but not one above all the numbers in use.
func StartRestartable(tb testing.TB, width, height int) *Server {
	tb.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		prereq.Missing(tb, prereq.X, "Xvfb is not installed: %v", err)
	}
	s := &Server{Width: width, Height: height}
	var err error
	for range 5 { // a number in use makes Xvfb exit at start: draw again
		s.Display = ":" + strconv.Itoa(1000+rand.IntN(30000))
		if err = s.launchOnDisplay(); err == nil {
			tb.Cleanup(s.Stop)
			return s
		}
	}
	tb.Fatalf("start Xvfb: %v", err)
	return nil
}

// Restart stops the server if it runs and starts a new one on the same
// display number and size, as a display manager restarting X would:
// clients of the old one lose their connections, new connections reach
// the new one. Use it on a server of StartRestartable.
func (s *Server) Restart() error {
	s.Stop()
	return s.launchOnDisplay()
}

// launchOnDisplay starts Xvfb on s.Display and waits until it accepts
// connections.
func (s *Server) launchOnDisplay() error {
	cmd := exec.Command("Xvfb", s.Display, "-screen", "0",
		fmt.Sprintf("%dx%dx24", s.Width, s.Height), "-nolisten", "tcp", "-noreset")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start Xvfb %s: %w", s.Display, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	sock := "/tmp/.X11-unix/X" + strings.TrimPrefix(s.Display, ":")
	deadline := time.After(15 * time.Second)
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("Xvfb %s exited at start", s.Display)
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("Xvfb %s did not come up within 15s", s.Display)
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

// Stop terminates Xvfb and waits for it (and gives up a number Down
// reserved).
func (s *Server) Stop() {
	if s.reserved != 0 {
		unix.Close(s.reserved)
		s.reserved = 0
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	waited := s.exited
	if waited == nil {
		waited = make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(waited) }()
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-waited
	}
	s.cmd, s.exited = nil, nil
}
