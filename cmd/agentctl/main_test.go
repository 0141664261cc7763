package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
