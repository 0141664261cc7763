package computer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentd-dev/agentd/actions"
)

// stepper records what it is asked to do, in order, and fails the action
// of type fail.
type stepper struct {
	log  *[]string
	fail actions.Type
}

func (s stepper) Do(_ context.Context, a actions.Action) (ActionResult, error) {
	*s.log = append(*s.log, "do "+string(a.Type))
	if a.Type == s.fail {
		return ActionResult{Type: string(a.Type), Error: "it broke"}, nil
	}
	return ActionResult{Type: string(a.Type), OK: true}, nil
}

func (s stepper) Screenshot(context.Context) (Screenshot, error) {
	*s.log = append(*s.log, "screenshot")
	return Screenshot{PNG: []byte("png")}, nil
}

func TestSequential(t *testing.T) {
	call := []actions.Action{{Type: actions.Move}, {Type: actions.Screenshot}, {Type: actions.Click}}
	refuse := errors.New("refused")
	for _, tc := range []struct {
		name     string
		as       []actions.Action
		fail     actions.Type
		refuseAt int // -1: approve every step
		want     []string
		err      error
	}{
		{"all steps, each asked first", call, "", -1,
			[]string{"before 0", "do move", "done 0 true", "before 1", "screenshot", "done 1 true", "before 2", "do click", "done 2 true", "before 3 final", "screenshot"}, nil},
		{"only the final screenshot", nil, "", -1, []string{"before 0 final", "screenshot"}, nil},
		{"a refusal stops before the step", call, "", 2,
			[]string{"before 0", "do move", "done 0 true", "before 1", "screenshot", "done 1 true", "before 2"}, refuse},
		{"a refused final screenshot is not taken", call, "", 3,
			[]string{"before 0", "do move", "done 0 true", "before 1", "screenshot", "done 1 true", "before 2", "do click", "done 2 true", "before 3 final"}, refuse},
		{"a failed action stops the call", call, actions.Move, -1, []string{"before 0", "do move", "done 0 false"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			h := Hooks{
				Before: func(_ context.Context, s Step) error {
					e := fmt.Sprint("before ", s.Index)
					if s.Final {
						e += " final"
					}
					log = append(log, e)
					if s.Index == tc.refuseAt {
						return refuse
					}
					return nil
				},
				Done: func(r ActionResult) { log = append(log, fmt.Sprint("done ", r.Index, " ", r.OK)) },
			}
			shot, err := Sequential(stepper{&log, tc.fail}).Run(context.Background(), tc.as, h)
			if !slices.Equal(log, tc.want) {
				t.Fatalf("steps\n got %q\nwant %q", log, tc.want)
			}
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("err = %v, want %v", err, tc.err)
			case tc.fail != "" && (err == nil || err.Error() != "it broke"):
				t.Fatalf("err = %v, want the action's own error", err)
			case tc.err == nil && tc.fail == "" && (err != nil || string(shot.PNG) != "png"):
				t.Fatalf("shot %q, err %v", shot.PNG, err)
			}
		})
	}
}

func TestSequentialCancelledRunsNothing(t *testing.T) {
	var log []string
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Sequential(stepper{log: &log}).Run(ctx, []actions.Action{{Type: actions.Move}}, Hooks{})
	if !errors.Is(err, context.Canceled) || len(log) != 0 {
		t.Fatalf("err %v, steps %q", err, log)
	}
}
