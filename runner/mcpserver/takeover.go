package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/computer"
)

// heldText starts every result of a call refused because a person holds
// the desktop.
const heldText = "held by a person: a person has taken over the desktop"

// heldResult answers a call refused because a person holds the desktop
// (agentd's lease; err is agentd's refusal, nil when the call was not
// sent): the call is not queued; the next call after the hand back tells
// what happened.
func (x *session) heldResult(callID string, steps []string, err error) *mcp.CallToolResult {
	x.held = true
	ran := min(ranBefore(err), len(steps))
	ev := &runner.TakeoverEvent{Phase: runner.TakeoverPaused, Ran: ran, NotRun: steps[ran:]}
	x.event(runner.Event{Kind: runner.EventTakeover, CallID: callID, Takeover: ev})
	msg := fmt.Sprintf("%s. %d of the call's %d step(s) ran before it", heldText, ran, len(steps))
	if len(ev.NotRun) > 0 {
		msg += "; these did not run and will not run later: " + strings.Join(ev.NotRun, "; ")
	}
	return errorResult(msg + ". Wait, then call again: the call after the person hands the desktop back answers with what they did and a fresh screenshot.")
}

// takenResult answers a call agentd refused because a person took the
// desktop over (err is the refusal). agentd tells the session of a take
// over and of its hand back after the fact, so a call may be refused
// before the session has heard of a take over already handed back: when
// nothing of the call ran, it is checked again at once, as the next call
// would be, and answered as the first call after the hand back (what the
// person did, a fresh screenshot) when there was one, else "held".
func (x *session) takenResult(ctx context.Context, callID string, steps []string, err error) *mcp.CallToolResult {
	if ranBefore(err) > 0 {
		return x.heldResult(callID, steps, err)
	}
	x.held = true
	return x.takeoverCheck(ctx, callID, steps)
}

// ranBefore counts the actions of a call that completed before agentd
// refused it (the refusal comes at a step, between actions).
func ranBefore(err error) int {
	var ge *guest.Error
	if errors.As(err, &ge) {
		return len(ge.Results)
	}
	return 0
}

// takeoverCheck runs before each call: when agentd told the session of a
// take over since the last call (or the last call, or this one, was
// refused), the call does not run. While the person still holds the
// desktop it is refused again; once they handed it back it is answered
// with what they did, their note and a fresh screenshot (the model has
// not seen the desktop as the person left it, and agentd refuses actions
// until the hand back is collected). nil: no take over, the call goes on.
func (x *session) takeoverCheck(ctx context.Context, callID string, steps []string) *mcp.CallToolResult {
	c := x.desk.Client
	n, _ := c.Takeovers()
	if n == x.seen && !x.held {
		return nil
	}
	// Collect the hand back. While a person holds the desktop the wait
	// would last until they hand it back: it is bounded, briefly when
	// agentd's last word was that the desktop is held (its hand back event
	// may be on its way), and then answered as held, never queued.
	bound := handbackWait
	if c.Held() || x.held {
		bound = heldWait
	}
	wait, cancel := context.WithTimeout(ctx, bound)
	hb, err := c.AwaitHandback(wait)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil && wait.Err() != nil:
		return x.heldResult(callID, steps, nil)
	case err != nil:
		return errorResult("collecting the hand back: " + failure(ctx, err))
	}
	if hb.Leases == 0 && !x.held {
		// Nothing handed back since the last collection: agentd's word of
		// a take over collected then came after it. The call goes on.
		x.seen = n
		return nil
	}
	x.seen, x.held = n, false
	shot, err := c.Run(ctx, nil, computer.Hooks{})
	if errors.Is(err, computer.ErrTakenOver) {
		return x.heldResult(callID, steps, err)
	}
	if err != nil {
		return errorResult(failure(ctx, err))
	}
	x.image = shot.Transform.Image
	x.event(runner.Event{Kind: runner.EventTakeover, CallID: callID,
		Takeover: &runner.TakeoverEvent{Phase: runner.TakeoverHandedBack, NotRun: steps, Handback: hb}})
	x.event(runner.Event{Kind: runner.EventScreenshot, CallID: callID,
		Screenshot: &runner.ScreenshotEvent{Transform: shot.Transform, Bytes: len(shot.PNG), PNG: shot.PNG}})
	return screenshotResult(shot, handbackText(steps, hb))
}

// handbackWait bounds the wait for a hand back agentd should have at once;
// heldWait, for one whose event has not arrived yet.
const (
	handbackWait = 2 * time.Second
	heldWait     = 250 * time.Millisecond
)

// handbackText tells the client what a person did while holding the
// desktop.
func handbackText(notRun []string, hb computer.Handback) string {
	var b strings.Builder
	b.WriteString("A person held the desktop and has handed it back. ")
	if n := len(hb.Actions) + hb.More; n > 0 {
		fmt.Fprintf(&b, "They performed %d action(s) on it. ", n)
	}
	if hb.Orphaned {
		b.WriteString("Their connection was lost while they held it. ")
	}
	fmt.Fprintf(&b, "Nothing of this call ran (%s): ", strings.Join(notRun, "; "))
	b.WriteString("the screenshot shows the desktop as it is now; look at it before you act again.")
	for _, n := range hb.Notes {
		fmt.Fprintf(&b, "\n\nThe person's note: %s", n)
	}
	return b.String()
}
