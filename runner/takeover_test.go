package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// overseen is a driver a person takes over once, just before action
// refuseAt of the next call: that step is refused with ErrTakenOver.
type overseen struct {
	computer.Driver
	refuseAt int
	handback computer.Handback
	awaited  int
}

func (o *overseen) Run(ctx context.Context, as []actions.Action, h computer.Hooks) (computer.Screenshot, error) {
	at := o.refuseAt
	if at < 0 || at > len(as) {
		return o.Driver.Run(ctx, as, h)
	}
	o.refuseAt = -1
	inner := h
	inner.Before = func(ctx context.Context, s computer.Step) error {
		if s.Index == at {
			return fmt.Errorf("agentd: taken_over: %w", computer.ErrTakenOver)
		}
		return nil
	}
	return o.Driver.Run(ctx, as, inner)
}

func (o *overseen) AwaitHandback(ctx context.Context) (computer.Handback, error) {
	o.awaited++
	return o.handback, nil
}

// A person takes the desktop over in the middle of a call: the actions
// from there on are not run (nor later), the run waits for the hand back,
// the call is answered with a fresh screenshot and the model is told, in a
// user message after the output, which of its actions did not run and what
// the person wrote; the events say who did what.
func TestTakeoverAnswersTheCallAfterTheHandBack(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Call(`{"type":"click","button":"left","x":5,"y":6}`, `{"type":"type","text":"hello"}`, `{"type":"keypress","keys":["ENTER"]}`),
		respserver.Final("done"))
	taken := time.Now()
	o := &overseen{Driver: computer.Sequential(d), refuseAt: -1, handback: computer.Handback{Leases: 1, By: []string{"the console"},
		Actions: []string{"click left (100,200)", "type 6 chars"}, Notes: []string{"I filled the form; press Send"}, Taken: taken, Returned: taken.Add(time.Second)}}
	ts.driver = o
	var events []Event
	runOpts := opts()
	// The second call: its click runs, then the person takes over.
	calls := 0
	runOpts.OnEvent = func(e Event) {
		events = append(events, e)
		if e.Kind == EventResponse && len(e.CallIDs) > 0 {
			calls++
			if calls == 2 {
				o.refuseAt = 1
			}
		}
	}
	res, err := ts.Run(context.Background(), runOpts, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if res.FinalMessage != "done" || o.awaited != 1 {
		t.Fatalf("result %+v, awaited %d", res, o.awaited)
	}
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "screenshot"}) {
		t.Fatalf("the driver ran %q: the refused type and keypress must never run", got)
	}
	reqs := srv.Requests()
	body := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{`"type":"computer_call_output"`, "data:image/png;base64,",
		"did not run: 1. type 5 chars; 2. keypress ENTER", "They performed 2 action(s)", "I filled the form; press Send"} {
		if !strings.Contains(body, want) {
			t.Errorf("the request after the hand back lacks %q:\n%.600s", want, body)
		}
	}
	if strings.Index(body, "computer_call_output") > strings.Index(body, "A person took over") {
		t.Error("the note comes before the call's output")
	}
	var phases []string
	for _, e := range events {
		if e.Kind == EventTakeover {
			phases = append(phases, e.Takeover.Phase)
			if e.Takeover.Phase == TakeoverHandedBack && (!slices.Equal(e.Takeover.Actions, o.handback.Actions) ||
				!slices.Equal(e.Takeover.NotRun, []string{"type 5 chars", "keypress ENTER"}) || e.Takeover.Ran != 1 || e.Takeover.By[0] != "the console") {
				t.Errorf("hand back event %+v", e.Takeover)
			}
		}
	}
	if !slices.Equal(phases, []string{TakeoverPaused, TakeoverHandedBack}) {
		t.Fatalf("takeover events %q", phases)
	}
}
