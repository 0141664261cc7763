//go:build linux && cgo

package xtest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/agentd/input"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
)

// TestRobotgoInputReconnectsAfterXRestart: the X server exits under an
// input.Device that holds a key; calls fail with input.ErrDisplayLost (the process
// lives on: Xlib's default would exit it) while the display is gone, and
// once a new server runs on the display the same input.Device drives it, with
// nothing of the old state (the held key, typing bindings) carried over.
func TestRobotgoInputReconnectsAfterXRestart(t *testing.T) {
	x := xvfbtest.StartRestartable(t, 320, 200)
	in, err := Open(x.Display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	ex := executor.New(in, executor.Options{Logf: t.Logf})
	ctx := context.Background()
	if _, err := ex.Do(ctx, actions.Action{Type: actions.TypeText, Text: "é✓"}); err != nil {
		t.Fatal(err)
	}
	if err := in.KeyDown(actions.Key{Keysym: "Shift_L", Modifier: true}); err != nil {
		t.Fatal(err)
	}

	if err := x.Down(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the loss itself, then a failed reconnect
		_, err := ex.Do(ctx, actions.Action{Type: actions.Click, X: 10, Y: 10})
		if !errors.Is(err, input.ErrDisplayLost) {
			t.Fatalf("click %d with the X server gone: %v, want input.ErrDisplayLost", i, err)
		}
	}

	if err := x.Restart(); err != nil {
		t.Fatal(err)
	}
	rec := xrecorder.Start(t, x.Display)
	if _, err := ex.Do(ctx, actions.Action{Type: actions.Click, X: 100, Y: 50, Button: actions.Right}); err != nil {
		t.Fatalf("click after the restart: %v", err)
	}
	ev := rec.WaitFor(t, isRelease(3), waitX)
	if ev.X != 100 || ev.Y != 50 || ev.State&xrecorder.ShiftMask != 0 {
		t.Fatalf("click arrived as %v, want (100,50) without Shift", ev)
	}
	if _, err := ex.Do(ctx, actions.Action{Type: actions.TypeText, Text: "ü✓"}); err != nil {
		t.Fatalf("type after the restart: %v", err)
	}
	rec.WaitTyped(t, "ü✓", waitX)
	if keys, mask := rec.Down(t); len(keys) != 0 || mask&0xff != 0 {
		t.Fatalf("left pressed after the restart: keys %v mask %#x", keys, mask)
	}
}
