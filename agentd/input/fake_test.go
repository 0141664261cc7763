package input_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/agentd/input"
	"github.com/agentd-dev/agentd/agentd/input/inputtest"
)

// TestFakeConformance: the recording fake keeps the Device contract as the
// X device does (input/xtest runs the same suite on a real X server).
func TestFakeConformance(t *testing.T) {
	inputtest.Run(t, func(t *testing.T) (input.Device, inputtest.Display) {
		f := input.NewFake(inputtest.Width, inputtest.Height)
		t.Cleanup(func() { _ = f.Close() })
		return f, fakeDisplay{f}
	})
}

// fakeDisplay reads what a display would show from the fake's record.
type fakeDisplay struct{ f *input.Fake }

func (d fakeDisplay) Held(testing.TB) []string {
	down := d.f.Down()
	slices.Sort(down)
	return down
}

func (d fakeDisplay) Pointer(t testing.TB) (int, int) {
	calls := d.f.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Op == "MoveTo" {
			return calls[i].X, calls[i].Y
		}
	}
	t.Fatal("the pointer was never moved")
	return 0, 0
}

func (d fakeDisplay) Typed(t testing.TB, want string) {
	t.Helper()
	var typed strings.Builder
	for _, c := range d.f.Calls() {
		if c.Op == "TypeRune" {
			typed.WriteRune(c.Rune)
		}
	}
	if typed.String() != want {
		t.Fatalf("typed %q, want %q", typed.String(), want)
	}
}
