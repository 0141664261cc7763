// Package xvfbtest starts a private Xvfb for tests and benchmarks.
//
// Xvfb chooses its own free display number (-displayfd), so tests that run in
// parallel, or next to a developer's desktop, never collide.
package xvfbtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is a running Xvfb owned by one test.
type Server struct {
	Display string // e.g. ":42"
	Width   int
	Height  int
	cmd     *exec.Cmd
}

// Start launches Xvfb at width×height×24 and stops it when tb ends.
// The test is skipped, not failed, only when Xvfb is not installed and
// AGENTD_REQUIRE_X is unset; CI sets it so a missing install fails loudly.
func Start(tb testing.TB, width, height int) *Server {
	tb.Helper()
	s, err := Launch(width, height)
	if err != nil {
		if _, lookErr := exec.LookPath("Xvfb"); lookErr != nil && os.Getenv("AGENTD_REQUIRE_X") == "" {
			tb.Skipf("Xvfb not installed: %v", lookErr)
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

// Stop terminates Xvfb and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	waited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-waited
	}
	s.cmd = nil
}
