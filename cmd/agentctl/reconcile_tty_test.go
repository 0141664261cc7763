//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// openPty returns both ends of a new pseudo-terminal.
func openPty(t *testing.T) (master, tty *os.File) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		prereq.Missing(t, prereq.Host, "a pseudo-terminal (/dev/ptmx): %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// On a terminal, --resume of a run stopped during an action shows the
// action and the last screenshot and asks: "not done" is two explicit
// answers (not performed, then run it again), and the typing runs again.
func TestRunResumeAsksOnATerminal(t *testing.T) {
	master, tty := openPty(t)
	_, d, dir := harness(t,
		respserver.Call(`{"type":"screenshot"}`),
		respserver.Call(`{"type":"type","text":"once"}`),
		respserver.Final("done"))
	var out agentdtest.SyncBuffer
	record := d.cancelledRun(t, dir, &out, &out)
	var prompts agentdtest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--resume", record}, tty, &out, &prompts)
	}()
	answer := func(question, line string) {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(prompts.String(), question) {
			if time.Now().After(deadline) {
				t.Fatalf("no question %q; asked:\n%s", question, prompts.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := master.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer("performed (done)? [y/N]", "n")
	answer("run it again (not-done)? [y/N]", "y")
	if err := <-done; err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	for _, want := range []string{"type 4 chars", filepath.Join(record, "step-001.png")} {
		if !strings.Contains(prompts.String(), want) {
			t.Errorf("the question does not show %q:\n%s", want, prompts.String())
		}
	}
	if len(d.actions) != 2 || d.actions[1].Text != "once" {
		t.Fatalf("actions %v, want the typing again", d.actions)
	}
}
