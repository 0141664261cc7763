package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// Execute runs one computer call for a caller that owns its own loop (for
// example one mixing computer calls with function calls), under the same
// rules as Run: strict validation first, approvals fail closed, one run or
// call at a time. The call must be as decoded from a response (its actions'
// RawJSON is what is validated). Points are checked against the image space
// the model last saw: opts.ImageSpace when the caller sent that screenshot
// itself, else the last screenshot this toolset sent (by Execute or Run). A
// call with coordinates and no known image space is bad input. onEvent, if
// set, observes the call as RunOptions.OnEvent observes a run.
//
// The returned item is the computer_call_output to send back; on failure the
// error is a *RunError.
func (t *Toolset) Execute(ctx context.Context, call responses.ResponseComputerToolCall, opts CallOptions, onEvent func(Event)) (responses.ResponseInputItemComputerCallOutputParam, error) {
	p, shot, err := t.execute(ctx, opts, onEvent, func(c *computerTool) (*plan, error) { return c.prepare(call) })
	if err != nil {
		return responses.ResponseInputItemComputerCallOutputParam{}, err
	}
	return outputParam(p, shot.PNG), nil
}

// ExecuteShot is Execute for a caller that decoded the call's actions
// itself, strictly (actions.Decode), and sends the settled screenshot
// itself (the MCP server): the actions are not encoded into a
// computer_call to be decoded again, their points are checked as
// Execute's, and it returns the settled screenshot (its PNG and
// transform) without the computer_call_output, whose data URL would be
// encoded for nothing. as belongs to the call until it returns.
func (t *Toolset) ExecuteShot(ctx context.Context, callID string, as []actions.Action, opts CallOptions, onEvent func(Event)) (computer.Screenshot, error) {
	_, shot, err := t.execute(ctx, opts, onEvent, func(c *computerTool) (*plan, error) { return c.planActions(callID, as) })
	return shot, err
}

func (t *Toolset) execute(ctx context.Context, opts CallOptions, onEvent func(Event), prepare func(*computerTool) (*plan, error)) (*plan, computer.Screenshot, error) {
	var none computer.Screenshot
	if err := t.gate.Acquire(ErrClosed, ErrBusy); err != nil {
		return nil, none, &RunError{Err: err}
	}
	defer t.gate.Release()
	x := &session{onEvent: onEvent}
	c := t.tool(opts)
	defer c.keepImage()
	s := &Step{x: x}

	p, err := prepare(c)
	if err != nil {
		return nil, none, x.fail(err)
	}
	if err := p.Approve(ctx, s); err != nil {
		return nil, none, x.fail(err)
	}
	shot, err := c.runCall(ctx, s, p)
	if err != nil {
		return nil, none, x.fail(err)
	}
	return p, shot, nil
}

// computerTool is the computer toolset as one Tool of a run.
type computerTool struct {
	t    *Toolset
	opts CallOptions
	// image is the image space of the last screenshot sent to the model:
	// the space the model's coordinates are in. Zero until one was sent.
	image scaling.Size
	// seen counts the take overs the driver had been told of when that
	// screenshot was asked for: a count past it means a person took the
	// desktop since, and what the model saw is out of date (takeover.go).
	seen uint64
}

// tool is the toolset as a Tool for one run or call, which holds it.
func (t *Toolset) tool(opts CallOptions) *computerTool {
	image := opts.ImageSpace
	if image == (scaling.Size{}) {
		image = t.image
	}
	c := &computerTool{t: t, opts: opts, image: image}
	c.seen, _ = c.takes()
	return c
}

// ImageSpace is the image space of the last screenshot sent to the model.
func (c *computerTool) ImageSpace() scaling.Size { return c.image }

// keepImage remembers the image space for the next Execute.
func (c *computerTool) keepImage() { c.t.image = c.image }

func (c *computerTool) Params() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{{OfComputer: &responses.ComputerToolParam{}}}
}

func (c *computerTool) Claims(item responses.ResponseOutputItemUnion) bool {
	return item.Type == "computer_call"
}

func (c *computerTool) Prepare(_ *Step, item responses.ResponseOutputItemUnion) (Call, error) {
	p, err := c.prepare(item.AsComputerCall())
	if err != nil {
		return nil, err
	}
	return p, nil
}

// plan is a computer call that passed validation.
type plan struct {
	tool    *computerTool
	callID  string
	actions []actions.Action
	checks  []SafetyCheck
	// preempted: a person took the desktop over while its safety checks
	// were asked; the call does not run (takeover.go).
	preempted error
}

func (p *plan) CallID() string { return p.callID }

// AnswerDone answers the call reconciled as done with a fresh screenshot:
// what the model needs to go on, acknowledging the call's safety checks,
// which were approved since it ran.
func (p *plan) AnswerDone(ctx context.Context, s *Step) (responses.ResponseInputItemUnionParam, error) {
	look := *p
	look.actions = []actions.Action{{Type: actions.Screenshot}}
	return look.Execute(ctx, s)
}

func (p *plan) Approve(ctx context.Context, s *Step) error { return p.tool.approveChecks(ctx, s, p) }

func (p *plan) Execute(ctx context.Context, s *Step) (responses.ResponseInputItemUnionParam, error) {
	shot, err := p.tool.runCall(ctx, s, p)
	if err != nil {
		return responses.ResponseInputItemUnionParam{}, err
	}
	return param.Override[responses.ResponseInputItemUnionParam](rawOutput(p, shot.PNG)), nil
}

// prepare decodes and validates every action of a call, strictly, before
// anything of it may run.
func (c *computerTool) prepare(call responses.ResponseComputerToolCall) (*plan, error) {
	bad := func(i int, err error) error { return &BadInputError{CallID: call.CallID, Index: i, Err: err} }
	if call.CallID == "" {
		return nil, bad(-1, errors.New("the call has no call_id"))
	}
	// "completed" means the model finished writing the call; anything else
	// may be a truncated list of actions.
	if call.Status != responses.ResponseComputerToolCallStatusCompleted {
		return nil, bad(-1, fmt.Errorf("the call's status is %q, not completed", call.Status))
	}
	if len(call.Actions) == 0 {
		if call.JSON.Action.Valid() {
			return nil, bad(-1, errors.New(`the call uses the single "action" of computer_use_preview; only the computer tool's "actions" list is supported`))
		}
		return nil, bad(-1, errors.New("the call has no actions"))
	}
	p := &plan{tool: c, callID: call.CallID}
	for i, raw := range call.Actions {
		a, err := actions.Decode([]byte(raw.RawJSON()))
		if err != nil {
			return nil, bad(i, err)
		}
		if err := c.checkPoints(a); err != nil {
			return nil, bad(i, err)
		}
		p.actions = append(p.actions, a)
	}
	for _, c := range call.PendingSafetyChecks {
		if c.ID == "" {
			return nil, bad(-1, errors.New("a pending safety check has no id"))
		}
		p.checks = append(p.checks, SafetyCheck{ID: c.ID, Code: c.Code, Message: c.Message})
	}
	return p, nil
}

// planActions is prepare for actions already decoded strictly: every
// point is checked before anything of the call may run.
func (c *computerTool) planActions(callID string, as []actions.Action) (*plan, error) {
	if callID == "" || len(as) == 0 {
		return nil, &BadInputError{CallID: callID, Index: -1, Err: errors.New("a call needs a call_id and actions")}
	}
	for i, a := range as {
		if err := c.checkPoints(a); err != nil {
			return nil, &BadInputError{CallID: callID, Index: i, Err: err}
		}
	}
	return &plan{tool: c, callID: callID, actions: as}, nil
}

// checkPoints requires every point of a to lie inside the image the model
// last saw: never clamped (docs/design.md, "Coordinates").
func (c *computerTool) checkPoints(a actions.Action) error {
	pts := a.Points()
	if len(pts) == 0 {
		return nil
	}
	if c.image.W <= 0 || c.image.H <= 0 {
		return fmt.Errorf("%s has coordinates but no screenshot has been sent to the model yet", a.Type)
	}
	for _, pt := range pts {
		if pt.X < 0 || pt.Y < 0 || pt.X >= c.image.W || pt.Y >= c.image.H {
			return fmt.Errorf("%s: point (%d,%d) is outside the %dx%d image", a.Type, pt.X, pt.Y, c.image.W, c.image.H)
		}
	}
	return nil
}

// approveChecks asks for the call's pending safety checks, if any. Missing
// callback, refusal, error, panic or a value other than true: refused.
func (c *computerTool) approveChecks(ctx context.Context, s *Step, p *plan) error {
	if len(p.checks) == 0 {
		return nil
	}
	ids := make([]string, len(p.checks))
	for i, c := range p.checks {
		ids[i] = c.ID
	}
	subject := "checks " + strings.Join(ids, ", ")
	ev := &ApprovalEvent{Kind: ApprovalSafetyChecks, Index: -1, Checks: slices.Clone(p.checks)}
	if c.stale() {
		p.preempt()
		return nil
	}
	s.Event(Event{Kind: EventApprovalAsked, CallID: p.callID,
		Approval: &ApprovalEvent{Kind: ApprovalSafetyChecks, Index: -1, Checks: slices.Clone(p.checks)}})
	ok, reason, err := false, "no approve_safety_checks callback is set", error(nil)
	if f := c.opts.ApproveSafetyChecks; f != nil {
		// The callback gets its own copies: what it changes cannot change
		// what runs.
		info := CallInfo{ResponseID: s.ResponseID(), CallID: p.callID, Actions: cloneActions(p.actions)}
		checks := slices.Clone(p.checks)
		actx, stop := c.watch(ctx)
		ok, reason, err = approval(func() (any, error) { return f(actx, info, checks) })
		stop()
	}
	if ctx.Err() == nil && c.stale() {
		withdrawn(s, p.callID, ev)
		p.preempt()
		return nil
	}
	return answered(ctx, s, ok, reason, err, &ApprovalError{Kind: ApprovalSafetyChecks, CallID: p.callID, Index: -1, Subject: subject}, ev)
}

// before asks BeforeAction, if set, about one action or the final screenshot.
func (c *computerTool) before(ctx context.Context, s *Step, info ActionInfo) error {
	f := c.opts.BeforeAction
	if f == nil {
		return nil
	}
	summary := info.Action.String()
	if info.IsFinalScreenshot {
		summary = "final screenshot"
	}
	if c.stale() {
		return takenOverAt(info.CallID)
	}
	s.Event(Event{Kind: EventApprovalAsked, CallID: info.CallID,
		Approval: &ApprovalEvent{Kind: ApprovalBeforeAction, Index: info.Index, Summary: summary}})
	info.Action = cloneAction(info.Action)
	info.Actions = cloneActions(info.Actions)
	actx, stop := c.watch(ctx)
	ok, reason, err := approval(func() (any, error) { return f(actx, info) })
	stop()
	if ctx.Err() == nil && c.stale() {
		withdrawn(s, info.CallID, &ApprovalEvent{Kind: ApprovalBeforeAction, Index: info.Index, Summary: summary})
		return takenOverAt(info.CallID)
	}
	return answered(ctx, s, ok, reason, err,
		&ApprovalError{Kind: ApprovalBeforeAction, CallID: info.CallID, Index: info.Index, Subject: summary},
		&ApprovalEvent{Kind: ApprovalBeforeAction, Index: info.Index, Summary: summary})
}

// cloneAction is a deep copy of a: its Keys and Path are its own.
func cloneAction(a actions.Action) actions.Action {
	a.Keys = slices.Clone(a.Keys)
	a.Path = slices.Clone(a.Path)
	return a
}

func cloneActions(as []actions.Action) []actions.Action {
	out := make([]actions.Action, len(as))
	for i, a := range as {
		out[i] = cloneAction(a)
	}
	return out
}

// answered reports an approval's outcome. Cancellation wins over an answer:
// a callback that approves after the run was cancelled approves nothing.
func answered(ctx context.Context, s *Step, ok bool, reason string, err error, refusal *ApprovalError, ev *ApprovalEvent) error {
	if ctx.Err() != nil {
		ok, reason = false, "cancelled"
	}
	ev.Approved, ev.Reason = ok, reason
	s.Event(Event{Kind: EventApprovalAnswered, CallID: refusal.CallID, Approval: ev})
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("cancelled while asking %s for call %s: %w", refusal.Kind, refusal.CallID, ctxErr)
	}
	if ok {
		return nil
	}
	refusal.Reason, refusal.Err = reason, err
	return refusal
}

// runCall performs a validated, approved call through the driver: each
// action in order, then the final screenshot. A call whose only action is a
// screenshot takes just that one. BeforeAction, when set, is asked
// immediately before each of these steps; without it the driver may run the
// call at once.
func (c *computerTool) runCall(ctx context.Context, s *Step, p *plan) (computer.Screenshot, error) {
	var zero computer.Screenshot
	as := p.actions
	if len(as) == 1 && as[0].Type == actions.Screenshot {
		as = nil
	}
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("cancelled before call %s: %w", p.callID, err)
	}
	if p.preempted != nil {
		return c.takenOver(ctx, s, p, as, 0, p.preempted)
	}
	seen, _ := c.takes()
	if seen != c.seen {
		// Chosen from a screenshot a person's take over made out of date.
		return c.takenOver(ctx, s, p, as, 0, takenOverAt(p.callID))
	}
	var (
		results   []computer.ActionResult
		stepStart = time.Now()
		refused   error // Before's own error, returned as it is
	)
	hooks := computer.Hooks{Done: func(r computer.ActionResult) {
		i := len(results)
		r.Index = i
		results = append(results, r)
		actionEvent(s, p.callID, i, as, r, r.Error, time.Since(stepStart))
		stepStart = time.Now()
	}}
	if c.opts.BeforeAction != nil {
		hooks.Before = func(ctx context.Context, st computer.Step) error {
			refused = c.beforeStep(ctx, s, p.callID, as, st)
			if refused == nil {
				s.Attempted(p.callID)
			}
			stepStart = time.Now()
			return refused
		}
	} else {
		s.Attempted(p.callID)
	}

	shot, err := c.t.driver.Run(ctx, as, hooks)
	okActions := 0
	for _, r := range results {
		if !r.OK {
			break
		}
		okActions++
	}
	if len(as) > 0 && okActions == len(as) {
		s.Completed(p.callID)
	}
	switch {
	case refused != nil && errors.Is(refused, computer.ErrTakenOver):
		// A question withdrawn because a person took the desktop over.
		return c.takenOver(ctx, s, p, as, okActions, refused)
	case refused != nil:
		return zero, refused
	case errors.Is(err, computer.ErrTakenOver):
		return c.takenOver(ctx, s, p, as, okActions, err)
	case err == nil && len(results) != len(as):
		err = fmt.Errorf("the driver reported %d results for %d actions", len(results), len(as))
	case err == nil && okActions < len(as):
		err = errors.New("the driver reported a failed action without an error")
	}
	if err == nil {
		err = checkScreenshot(shot.PNG, shot.Transform.Image)
	}
	if err != nil {
		if okActions < len(as) {
			i := okActions
			if len(results) == i {
				// It ended without a result: its event is this error.
				actionEvent(s, p.callID, i, as, computer.ActionResult{Index: i, Type: string(as[i].Type)}, err.Error(), time.Since(stepStart))
			}
			return zero, fmt.Errorf("call %s action %d (%s): %w", p.callID, i, as[i].Type, withCtx(ctx, err))
		}
		return zero, fmt.Errorf("call %s: screenshot: %w", p.callID, withCtx(ctx, err))
	}
	if len(as) == 0 {
		s.Completed(p.callID)
	}
	c.image, c.seen = shot.Transform.Image, seen
	s.Event(Event{Kind: EventScreenshot, CallID: p.callID, Duration: Duration(time.Since(stepStart)),
		Screenshot: &ScreenshotEvent{Transform: shot.Transform, Bytes: len(shot.PNG), PNG: shot.PNG}})
	return shot, nil
}

// beforeStep checks, immediately before a step of a call, that the run is
// still wanted, and asks BeforeAction about it.
func (c *computerTool) beforeStep(ctx context.Context, s *Step, callID string, as []actions.Action, st computer.Step) error {
	if st.Final {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cancelled before the screenshot of call %s: %w", callID, err)
		}
		return c.before(ctx, s, ActionInfo{CallID: callID, Index: st.Index, Action: actions.Action{Type: actions.Screenshot}, IsFinalScreenshot: true, Actions: as})
	}
	if st.Index < 0 || st.Index >= len(as) {
		return fmt.Errorf("the driver asked about action %d of a call with %d", st.Index, len(as))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cancelled before call %s action %d: %w", callID, st.Index, err)
	}
	return c.before(ctx, s, ActionInfo{CallID: callID, Index: st.Index, Action: as[st.Index], Actions: as})
}

// actionEvent reports one ended action; failure is why it failed.
func actionEvent(s *Step, callID string, i int, as []actions.Action, r computer.ActionResult, failure string, d time.Duration) {
	summary := ""
	if i < len(as) {
		summary = as[i].String()
	}
	ev := &ActionEvent{Index: i, Summary: summary, Result: r}
	if i < len(as) && as[i].Type == actions.Drag {
		ev.Path = slices.Clone(as[i].Path)
	}
	if !r.OK {
		ev.Error = failure
		if ev.Error == "" {
			ev.Error = "the driver reported a failure without a reason"
		}
	}
	s.Event(Event{Kind: EventAction, CallID: callID, Duration: Duration(d), Action: ev})
}

// withCtx makes sure an error caused by cancellation matches ctx.Err().
func withCtx(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	return err
}

// checkScreenshot makes sure the image is a PNG of the size its transform
// claims: the model's next coordinates will be read in that space.
func checkScreenshot(data []byte, size scaling.Size) error {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the driver returned an image that is not a PNG: %w", err)
	}
	if cfg.Width != size.W || cfg.Height != size.H {
		return fmt.Errorf("the driver returned a %dx%d image but its transform says %dx%d", cfg.Width, cfg.Height, size.W, size.H)
	}
	return nil
}

// rawOutput is outputParam as JSON, made directly: the SDK's encoder takes
// several milliseconds to escape a screenshot's base64 character by
// character, and base64 needs no escaping.
func rawOutput(p *plan, pngData []byte) json.RawMessage {
	type ack struct {
		ID      string `json:"id"`
		Code    string `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	head := struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Acks   []ack  `json:"acknowledged_safety_checks,omitempty"`
	}{Type: "computer_call_output", CallID: p.callID}
	for _, c := range p.checks {
		head.Acks = append(head.Acks, ack{c.ID, c.Code, c.Message})
	}
	h, _ := json.Marshal(head) // strings only: it cannot fail
	const prefix = `,"output":{"type":"computer_screenshot","detail":"original","image_url":"data:image/png;base64,`
	out := make([]byte, 0, len(h)+len(prefix)+base64.StdEncoding.EncodedLen(len(pngData))+3)
	out = append(out, h[:len(h)-1]...)
	out = append(out, prefix...)
	out = base64.StdEncoding.AppendEncode(out, pngData)
	return append(out, `"}}`...)
}

// outputParam is the computer_call_output answering p: the screenshot as a
// PNG data URL at its original detail, and the approved safety checks.
func outputParam(p *plan, pngData []byte) responses.ResponseInputItemComputerCallOutputParam {
	shot := responses.ResponseComputerToolCallOutputScreenshotParam{
		ImageURL: openai.String("data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData)),
	}
	// The SDK's screenshot param has no detail field yet; "original" keeps
	// the model's coordinates in the image's own pixels.
	shot.SetExtraFields(map[string]any{"detail": "original"})
	out := responses.ResponseInputItemComputerCallOutputParam{CallID: p.callID, Output: shot}
	for _, c := range p.checks {
		ack := responses.ResponseInputItemComputerCallOutputAcknowledgedSafetyCheckParam{ID: c.ID}
		if c.Code != "" {
			ack.Code = openai.String(c.Code)
		}
		if c.Message != "" {
			ack.Message = openai.String(c.Message)
		}
		out.AcknowledgedSafetyChecks = append(out.AcknowledgedSafetyChecks, ack)
	}
	return out
}
