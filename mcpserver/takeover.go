package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/computer"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner"
)

// heldText starts every result of a call refused because a person holds
// the desktop.
const heldText = "held by a person: a person has taken over the desktop"

// heldResult answers a call agentd refused because a person holds the
// desktop (its lease): the call is not queued; the next call after the hand
// back tells what happened.
func (x *session) heldResult(callID string, as []actions.Action, err error) *mcp.CallToolResult {
	x.held = true
	ev := &runner.TakeoverEvent{Phase: runner.TakeoverPaused}
	ran := ranBefore(err)
	ev.Ran = ran
	for _, a := range as[min(ran, len(as)):] {
		ev.NotRun = append(ev.NotRun, a.String())
	}
	x.event(runner.Event{Kind: runner.EventTakeover, CallID: callID, Takeover: ev})
	msg := fmt.Sprintf("%s. %d of the call's %d action(s) ran before it", heldText, ran, len(as))
	if len(ev.NotRun) > 0 {
		msg += "; these did not run and will not run later: " + strings.Join(ev.NotRun, "; ")
	}
	return errorResult(msg + ". Wait, then call again: the call after the person hands the desktop back answers with what they did and a fresh screenshot.")
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

// afterHold is the first call after a refusal: if the person still holds
// the desktop it is refused again; otherwise it is answered with what the
// person did, their note and a fresh screenshot, and none of its actions
// run (the model has not seen the desktop as the person left it). nil
// means the desktop was never really held: the call goes on.
func (x *session) afterHold(ctx context.Context, callID string, as []actions.Action) *mcp.CallToolResult {
	shot, err := x.drv.Run(ctx, nil, computer.Hooks{})
	if errors.Is(err, computer.ErrTakenOver) {
		return x.heldResult(callID, as, err)
	}
	if err != nil {
		return errorResult(failure(ctx, err))
	}
	hb, err := x.desk.Client.AwaitHandback(ctx)
	if err != nil {
		return errorResult("waiting for the hand back: " + failure(ctx, err))
	}
	x.held = false
	x.image = shot.Transform.Image
	notRun := make([]string, len(as))
	for i, a := range as {
		notRun[i] = a.String()
	}
	x.event(runner.Event{Kind: runner.EventTakeover, CallID: callID,
		Takeover: &runner.TakeoverEvent{Phase: runner.TakeoverHandedBack, NotRun: notRun, Handback: hb}})
	x.event(runner.Event{Kind: runner.EventScreenshot, CallID: callID,
		Screenshot: &runner.ScreenshotEvent{Transform: shot.Transform, Bytes: len(shot.PNG), PNG: shot.PNG}})
	return screenshotResult(shot, handbackText(notRun, hb))
}

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
	fmt.Fprintf(&b, "None of this call's actions ran (%s): ", strings.Join(notRun, "; "))
	b.WriteString("the screenshot shows the desktop as it is now; look at it before you act again.")
	for _, n := range hb.Notes {
		fmt.Fprintf(&b, "\n\nThe person's note: %s", n)
	}
	return b.String()
}
