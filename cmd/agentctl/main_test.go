package main

import (
	"fmt"
	"os"
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
