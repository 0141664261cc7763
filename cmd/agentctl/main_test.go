package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain keeps every test's run checkpoints out of the user's own state
// folder: agentctl run writes them under $XDG_STATE_HOME/agentd/runs, and a
// test that does not set its own (t.Setenv, or a child's environment)
// would otherwise write, and leave, them in ~/.local/state.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "agentctl-test-state-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := os.Setenv("XDG_STATE_HOME", dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// agentctlBinary is $AGENTD_BIN/agentctl (make test builds it), else a
// fresh build.
func agentctlBinary(t *testing.T) string {
	if bin := os.Getenv("AGENTD_BIN"); bin != "" {
		p, err := filepath.Abs(filepath.Join(bin, "agentctl"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("AGENTD_BIN is set but has no agentctl: %v", err)
		}
		return p
	}
	p := filepath.Join(t.TempDir(), "agentctl")
	build := exec.Command("go", "build", "-o", p, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build agentctl: %v\n%s", err, out)
	}
	return p
}

// TestHelp: -h on each command prints its usage and flags on standard
// error and ends with status 0, not an error.
func TestHelp(t *testing.T) {
	bin := agentctlBinary(t)
	for _, c := range []struct{ args, flag string }{
		{"act", "-screenshot-out"},
		{"screenshot", "-crop"},
		{"console", "-evals"},
		{"eval", "-trials"},
		{"exec", "-images"},
		{"exercise", "-mode"},
		{"guest up", "-apps"},
		{"guest down", "-backend"},
		{"guest status", "-json"},
		{"guest pool", "-size"},
		{"mcp", "-tools"},
		{"run", "-reconcile"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append(strings.Fields(c.args), "-h")...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("agentctl %s -h: %v\n%s", c.args, err, stderr.String())
			continue
		}
		if out := stderr.String(); !strings.Contains(out, "agentctl "+c.args) || !strings.Contains(out, c.flag) || stdout.Len() > 0 {
			t.Errorf("agentctl %s -h printed %q on standard output and %q on standard error; want its usage with %s on standard error", c.args, stdout.String(), out, c.flag)
		}
	}
}
