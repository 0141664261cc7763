package agentd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/runner/computer"
)

// TestGatedBatchAsksImmediatelyBeforeEachStep: the guest client's Run is one
// gated batch; Before is asked before each action and before the
// screenshot, each time when everything before that step has run and
// nothing of it has; a refusal stops the batch there and the session serves
// on.
func TestGatedBatchAsksImmediatelyBeforeEachStep(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	call := []actions.Action{
		{Type: actions.Move, X: 1, Y: 1},
		{Type: actions.Click, X: 2, Y: 2},
		{Type: actions.Keypress, Keys: []string{"a"}},
	}
	refused := errors.New("refused by policy")
	ran := func() int { done, _ := f.exec.snapshot(); return len(done) }
	for _, refuseAt := range []int{-1, 0, 1, 3} {
		t.Run(fmt.Sprint("refuse at ", refuseAt), func(t *testing.T) {
			before := ran()
			var log []string
			shot, err := c.Run(ctx5(t), call, computer.Hooks{
				Before: func(_ context.Context, s computer.Step) error {
					log = append(log, fmt.Sprintf("ask %d final=%v ran=%d", s.Index, s.Final, ran()-before))
					if s.Index == refuseAt {
						return refused
					}
					return nil
				},
				Done: func(r computer.ActionResult) { log = append(log, fmt.Sprintf("done %d ok=%v", r.Index, r.OK)) },
			})
			var want []string
			for i := range len(call) + 1 {
				want = append(want, fmt.Sprintf("ask %d final=%v ran=%d", i, i == len(call), i))
				if i == refuseAt {
					break
				}
				if i < len(call) {
					want = append(want, fmt.Sprintf("done %d ok=true", i))
				}
			}
			if !slices.Equal(log, want) {
				t.Fatalf("steps\n got %q\nwant %q", log, want)
			}
			if refuseAt < 0 {
				if err != nil || len(shot.PNG) == 0 {
					t.Fatalf("shot %d bytes, err %v", len(shot.PNG), err)
				}
				return
			}
			if !errors.Is(err, refused) || len(shot.PNG) != 0 {
				t.Fatalf("err %v (shot %d bytes), want the refusal and no screenshot", err, len(shot.PNG))
			}
			if got := ran() - before; got != min(refuseAt, len(call)) {
				t.Fatalf("%d actions ran, want %d", got, refuseAt)
			}
		})
	}
}

// TestBatchViewAppliesFromItsScreenshot: a batch's actions are in the image
// space of the screenshot before it; the view set with SetView makes its
// screenshot and the coordinates of the next call.
func TestBatchViewAppliesFromItsScreenshot(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	c.SetView(wire.View{Width: 100, Height: 50})
	click := []actions.Action{{Type: actions.Click, X: 10, Y: 10}}
	shot, err := c.Run(ctx5(t), click, computer.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if shot.Transform.Image.W != 100 || shot.Transform.Image.H != 50 {
		t.Fatalf("screenshot %v, want the new view's 100×50", shot.Transform.Image)
	}
	if _, err := c.Run(ctx5(t), click, computer.Hooks{}); err != nil {
		t.Fatal(err)
	}
	done, _ := f.exec.snapshot()
	if len(done) != 2 || done[0].X != 10 || done[0].Y != 10 || done[1].X != 20 || done[1].Y != 20 {
		t.Fatalf("clicked %+v: the first in the native space, the second in the 100×50 view", done)
	}
}
