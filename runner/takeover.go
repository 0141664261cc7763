package runner

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
)

// EventTakeover: a person holds the desktop (Takeover). It comes twice for
// a call: when the call was refused ("paused": the run waits) and when the
// person handed the desktop back ("handed_back": what they did, and the
// call is answered with a fresh screenshot).
const EventTakeover EventKind = "takeover"

// The phases of a TakeoverEvent.
const (
	TakeoverPaused     = "paused"
	TakeoverHandedBack = "handed_back"
)

// TakeoverEvent is who did what while a person held the desktop. Typed
// text is shown by its length only, as for the model's actions.
type TakeoverEvent struct {
	Phase string `json:"phase"`
	// NotRun are the call's actions that did not run (in short); Ran
	// counts those that had run before the refusal.
	NotRun []string `json:"not_run,omitempty"`
	Ran    int      `json:"ran"`
	// Handback is set when handed back: who held the desktop, what they
	// did (in screen pixels), their notes for the model, and whether a
	// person's connection went away while holding it.
	computer.Handback
}

// takenOver answers a call that a person's take over stopped (the driver
// refused a step with computer.ErrTakenOver: nothing of it ran, nothing is
// queued). The run waits for the hand back, answers the call with a fresh
// screenshot and tells the model, in a user message after the turn's
// outputs, that a person acted and which of its actions did not run.
func (c *computerTool) takenOver(ctx context.Context, s *Step, p *plan, as []actions.Action, ran int, refusal error) (computer.Screenshot, error) {
	var zero computer.Screenshot
	o, ok := c.t.driver.(computer.Overseen)
	if !ok || s.x.ctl == nil {
		// Execute has no turn to add the message to; its caller decides.
		return zero, fmt.Errorf("call %s: %w", p.callID, refusal)
	}
	ev := &TakeoverEvent{Phase: TakeoverPaused, Ran: ran}
	for _, a := range as[ran:] {
		ev.NotRun = append(ev.NotRun, a.String())
	}
	s.Event(Event{Kind: EventTakeover, CallID: p.callID, Takeover: ev})
	var all computer.Handback
	for {
		hb, err := o.AwaitHandback(ctx)
		if err != nil {
			return zero, fmt.Errorf("call %s: waiting for the person to hand the desktop back: %w", p.callID, withCtx(ctx, err))
		}
		merge(&all, hb)
		start := time.Now()
		seen, _ := c.takes()
		shot, err := c.t.driver.Run(ctx, nil, computer.Hooks{})
		if errors.Is(err, computer.ErrTakenOver) {
			continue // taken over again before the screenshot
		}
		if err == nil {
			err = checkScreenshot(shot.PNG, shot.Transform.Image)
		}
		if err != nil {
			return zero, fmt.Errorf("call %s: the screenshot after the hand back: %w", p.callID, withCtx(ctx, err))
		}
		back := *ev
		back.Phase, back.Handback = TakeoverHandedBack, all
		s.Event(Event{Kind: EventTakeover, CallID: p.callID, Takeover: &back})
		c.image, c.seen = shot.Transform.Image, seen
		s.Event(Event{Kind: EventScreenshot, CallID: p.callID, Duration: Duration(time.Since(start)),
			Screenshot: &ScreenshotEvent{Transform: shot.Transform, Bytes: len(shot.PNG), PNG: shot.PNG}})
		if err := s.x.ctl.AppendUserText(takeoverText(p.callID, ev.NotRun, all)); err != nil {
			return zero, fmt.Errorf("call %s: %w", p.callID, err)
		}
		return shot, nil
	}
}

// ErrQuestionStale is why a question about a call is withdrawn (the cause
// of its context's end): a person took the desktop over, so the
// screenshot the call was chosen from, and the question shows, is out of
// date. The call does not run; it is answered after the hand back.
var ErrQuestionStale = errors.New("a person took over the desktop: the screenshot this question refers to is out of date, so the model's call will not run; the model gets a fresh screenshot after the hand back")

// takenOverAt is the refusal of a call stopped by a take over before it
// reached the driver (it matches computer.ErrTakenOver).
func takenOverAt(callID string) error {
	return fmt.Errorf("call %s: %w", callID, computer.ErrTakenOver)
}

// takes is the driver's count of take overs and a channel closed at the
// next one (0 and nil for a driver not told of them).
func (c *computerTool) takes() (uint64, <-chan struct{}) {
	w, ok := c.t.driver.(computer.Watched)
	if !ok {
		return 0, nil
	}
	return w.Takeovers()
}

// stale reports whether a person took the desktop over since the
// screenshot the model last saw was asked for.
func (c *computerTool) stale() bool {
	n, _ := c.takes()
	return n != c.seen
}

// watch is ctx for a question about a call: it ends, with the cause
// ErrQuestionStale, when a person takes the desktop over. stop releases
// it once the question is answered.
func (c *computerTool) watch(ctx context.Context) (qctx context.Context, stop func()) {
	n, next := c.takes()
	if next == nil {
		return ctx, func() {}
	}
	qctx, cancel := context.WithCancelCause(ctx)
	if n != c.seen {
		cancel(ErrQuestionStale)
		return qctx, func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-next:
			cancel(ErrQuestionStale)
		case <-quit:
		case <-qctx.Done():
		}
	}()
	return qctx, func() {
		close(quit)
		<-done
		cancel(nil)
	}
}

// withdrawn records a question answered by nobody: withdrawn because a
// person took the desktop over.
func withdrawn(s *Step, callID string, ev *ApprovalEvent) {
	ev.Approved, ev.Reason = false, "withdrawn: a person took over the desktop"
	s.Event(Event{Kind: EventApprovalAnswered, CallID: callID, Approval: ev})
}

// preempt marks a call stopped by a take over while its safety checks were
// asked: it does not run, and its answer acknowledges no check, since
// none was approved.
func (p *plan) preempt() {
	p.preempted, p.checks = takenOverAt(p.callID), nil
}

func merge(all *computer.Handback, hb computer.Handback) {
	if hb.Leases == 0 {
		return
	}
	if all.Leases == 0 {
		all.Taken = hb.Taken
	}
	all.Leases += hb.Leases
	for _, b := range hb.By {
		if !slices.Contains(all.By, b) {
			all.By = append(all.By, b)
		}
	}
	all.Actions = append(all.Actions, hb.Actions...)
	all.More += hb.More
	all.Notes = append(all.Notes, hb.Notes...)
	all.Orphaned = all.Orphaned || hb.Orphaned
	all.Returned = hb.Returned
}

// takeoverText is what the model is told after a hand back.
func takeoverText(callID string, notRun []string, hb computer.Handback) string {
	var b strings.Builder
	b.WriteString("A person took over the desktop while you were working and has handed it back to you. ")
	if n := len(hb.Actions) + hb.More; n > 0 {
		fmt.Fprintf(&b, "They performed %d action(s) on it. ", n)
	}
	if len(notRun) > 0 {
		fmt.Fprintf(&b, "These actions of your call %s did not run: ", callID)
		for i, a := range notRun {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%d. %s", i+1, a)
		}
		b.WriteString(". ")
	} else {
		fmt.Fprintf(&b, "Your call %s was answered only after the hand back. ", callID)
	}
	b.WriteString("The screenshot answering that call shows the desktop as it is now: look at it before you act again.")
	for _, n := range hb.Notes {
		fmt.Fprintf(&b, "\n\nThe person's note: %s", n)
	}
	return b.String()
}

// FinalOverseer is a Tool whose desktop a person may take over while the
// model writes a final message. A final message written from a screenshot
// the person made out of date does not end the run: HandedBack waits for
// the hand back of a take over the model was not told of, records it as
// for a call (AwaitFinalHandback), and returns what tells the model (ok
// false: there was none).
type FinalOverseer interface {
	HandedBack(ctx context.Context, s *Step) (tell responses.ResponseInputItemUnionParam, ok bool, err error)
}

// handedBack asks each overseer of the run in turn.
func handedBack(ctx context.Context, s *Step, tools []Tool) (responses.ResponseInputParam, error) {
	var tell responses.ResponseInputParam
	for _, t := range tools {
		o, ok := t.(FinalOverseer)
		if !ok {
			continue
		}
		item, ok, err := o.HandedBack(ctx, s)
		if err != nil {
			return nil, err
		}
		if ok {
			tell = append(tell, item)
		}
	}
	return tell, nil
}

// AwaitFinalHandback waits for the hand backs of take overs made since the
// model's last call on w's desktop. agentd tells the session of a take as
// it happens, but that event may still be on its way: the wait itself is a
// round trip to agentd, which keeps each hand back for the session it was
// taken during until it is collected, so none is missed. Both moments are
// recorded as takeover events (the first, "paused", once the run knows).
func AwaitFinalHandback(ctx context.Context, s *Step, w computer.Watched, told bool) (computer.Handback, error) {
	ev := &TakeoverEvent{Phase: TakeoverPaused}
	if told {
		s.Event(Event{Kind: EventTakeover, Takeover: ev})
	}
	hb, err := w.AwaitHandback(ctx)
	if err != nil {
		return hb, fmt.Errorf("after the final message: waiting for the person to hand the desktop back: %w", withCtx(ctx, err))
	}
	if hb.Leases == 0 {
		return hb, nil
	}
	if !told {
		s.Event(Event{Kind: EventTakeover, Takeover: ev})
	}
	back := *ev
	back.Phase, back.Handback = TakeoverHandedBack, hb
	s.Event(Event{Kind: EventTakeover, Takeover: &back})
	return hb, nil
}

// HandedBack: the computer tool answers a take over before a final message
// with a user message holding a fresh screenshot, in the image space the
// model's coordinates are in, and the person's notes.
func (c *computerTool) HandedBack(ctx context.Context, s *Step) (responses.ResponseInputItemUnionParam, bool, error) {
	var zero responses.ResponseInputItemUnionParam
	w, ok := c.t.driver.(computer.Watched)
	if !ok {
		return zero, false, nil
	}
	var all computer.Handback
	told := c.stale()
	for {
		hb, err := AwaitFinalHandback(ctx, s, w, told)
		if err != nil {
			return zero, false, err
		}
		merge(&all, hb)
		if all.Leases == 0 {
			return zero, false, nil
		}
		start := time.Now()
		seen, _ := c.takes()
		shot, err := c.t.driver.Run(ctx, nil, computer.Hooks{})
		if errors.Is(err, computer.ErrTakenOver) {
			told = true // taken over again before the screenshot
			continue
		}
		if err == nil {
			err = checkScreenshot(shot.PNG, shot.Transform.Image)
		}
		if err != nil {
			return zero, false, fmt.Errorf("the screenshot after the hand back: %w", withCtx(ctx, err))
		}
		c.image, c.seen = shot.Transform.Image, seen
		s.Event(Event{Kind: EventScreenshot, Duration: Duration(time.Since(start)),
			Screenshot: &ScreenshotEvent{Transform: shot.Transform, Bytes: len(shot.PNG), PNG: shot.PNG}})
		text := FinalTakeoverText(all, "The screenshot below shows the desktop as it is now: look at it before you act again or finish.")
		return responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			{OfInputText: &responses.ResponseInputTextParam{Text: text}},
			{OfInputImage: &responses.ResponseInputImageParam{Detail: responses.ResponseInputImageDetailOriginal,
				ImageURL: openai.String("data:image/png;base64," + base64.StdEncoding.EncodeToString(shot.PNG))}},
		}, responses.EasyInputMessageRoleUser), true, nil
	}
}

// FinalTakeoverText is what the model is told of a take over made while it
// wrote its final message; look says how to see the desktop now.
func FinalTakeoverText(hb computer.Handback, look string) string {
	var b strings.Builder
	b.WriteString("A person took over the desktop while you were writing your last message and has handed it back to you, so that message was written from a screen that is out of date. ")
	if n := len(hb.Actions) + hb.More; n > 0 {
		fmt.Fprintf(&b, "They performed %d action(s) on it. ", n)
	}
	b.WriteString(look)
	for _, n := range hb.Notes {
		fmt.Fprintf(&b, "\n\nThe person's note: %s", n)
	}
	return b.String()
}
