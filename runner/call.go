package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// Execute runs one computer call for a caller that owns its own loop (for
// example one mixing computer calls with function calls), under the same
// rules as Run: strict validation first, approvals fail closed, one run or
// call at a time. The call must be as decoded from a response (its actions'
// RawJSON is what is validated). Points are checked against the screenshot
// the previous Execute returned; a call with coordinates before any
// screenshot is bad input, so let the model start with a screenshot.
//
// The returned item is the computer_call_output to send back; on failure the
// error is a *RunError.
func (t *Toolset) Execute(ctx context.Context, call responses.ResponseComputerToolCall, opts CallOptions) (responses.ResponseInputItemComputerCallOutputParam, error) {
	var zero responses.ResponseInputItemComputerCallOutputParam
	if err := t.acquire(); err != nil {
		return zero, &RunError{Err: err}
	}
	defer t.release()
	x := &session{t: t, opts: opts, image: t.image}
	defer func() { t.image = x.image }()

	p, err := x.prepare(call)
	if err != nil {
		return zero, x.fail(err)
	}
	if err := x.approveChecks(ctx, p); err != nil {
		return zero, x.fail(err)
	}
	out, err := x.runCall(ctx, p)
	if err != nil {
		return zero, x.fail(err)
	}
	return out, nil
}

// session is the state of one Run or Execute.
type session struct {
	t        *Toolset
	opts     CallOptions
	step     int
	maxSteps int
	// responseID is the last response received.
	responseID string
	// image is the image space of the last screenshot sent to the model:
	// the space the model's coordinates are in. Zero until one was sent.
	image     scaling.Size
	attempted []string
	completed []string
	usage     Totals
}

// plan is a computer call that passed validation.
type plan struct {
	callID  string
	actions []actions.Action
	checks  []SafetyCheck
}

func (x *session) fail(err error) *RunError {
	return &RunError{
		Err:              err,
		ResponseID:       x.responseID,
		Steps:            x.step,
		AttemptedCallIDs: x.attempted,
		CompletedCallIDs: x.completed,
		Usage:            x.usage,
	}
}

func (x *session) event(ev Event) {
	ev.Time = time.Now()
	ev.Step, ev.MaxSteps = x.step, x.maxSteps
	if ev.ResponseID == "" {
		ev.ResponseID = x.responseID
	}
	observe(x.opts.OnEvent, ev)
}

// prepare decodes and validates every action of a call, strictly, before
// anything of it may run.
func (x *session) prepare(call responses.ResponseComputerToolCall) (plan, error) {
	bad := func(i int, err error) error { return &BadInputError{CallID: call.CallID, Index: i, Err: err} }
	if call.CallID == "" {
		return plan{}, bad(-1, errors.New("the call has no call_id"))
	}
	// "completed" means the model finished writing the call; anything else
	// may be a truncated list of actions.
	if call.Status != responses.ResponseComputerToolCallStatusCompleted {
		return plan{}, bad(-1, fmt.Errorf("the call's status is %q, not completed", call.Status))
	}
	if len(call.Actions) == 0 {
		if call.JSON.Action.Valid() {
			return plan{}, bad(-1, errors.New(`the call uses the single "action" of computer_use_preview; only the computer tool's "actions" list is supported`))
		}
		return plan{}, bad(-1, errors.New("the call has no actions"))
	}
	p := plan{callID: call.CallID}
	for i, raw := range call.Actions {
		a, err := actions.Decode([]byte(raw.RawJSON()))
		if err != nil {
			return plan{}, bad(i, err)
		}
		if err := x.checkPoints(a); err != nil {
			return plan{}, bad(i, err)
		}
		p.actions = append(p.actions, a)
	}
	for _, c := range call.PendingSafetyChecks {
		if c.ID == "" {
			return plan{}, bad(-1, errors.New("a pending safety check has no id"))
		}
		p.checks = append(p.checks, SafetyCheck{ID: c.ID, Code: c.Code, Message: c.Message})
	}
	return p, nil
}

// checkPoints requires every point of a to lie inside the image the model
// last saw: never clamped (SPEC §3).
func (x *session) checkPoints(a actions.Action) error {
	pts := a.Points()
	if len(pts) == 0 {
		return nil
	}
	if x.image.W <= 0 || x.image.H <= 0 {
		return fmt.Errorf("%s has coordinates but no screenshot has been sent to the model yet", a.Type)
	}
	for _, pt := range pts {
		if pt.X < 0 || pt.Y < 0 || pt.X >= x.image.W || pt.Y >= x.image.H {
			return fmt.Errorf("%s: point (%d,%d) is outside the %dx%d image", a.Type, pt.X, pt.Y, x.image.W, x.image.H)
		}
	}
	return nil
}

// approveChecks asks for the call's pending safety checks, if any. Missing
// callback, refusal, error, panic or a value other than true: refused.
func (x *session) approveChecks(ctx context.Context, p plan) error {
	if len(p.checks) == 0 {
		return nil
	}
	ids := make([]string, len(p.checks))
	for i, c := range p.checks {
		ids[i] = c.ID
	}
	subject := "checks " + strings.Join(ids, ", ")
	x.event(Event{Kind: EventApprovalAsked, CallID: p.callID,
		Approval: &ApprovalEvent{Kind: ApprovalSafetyChecks, Index: -1, Checks: p.checks}})
	ok, reason, err := false, "no approve_safety_checks callback is set", error(nil)
	if f := x.opts.ApproveSafetyChecks; f != nil {
		info := CallInfo{ResponseID: x.responseID, CallID: p.callID, Actions: append([]actions.Action(nil), p.actions...)}
		checks := append([]SafetyCheck(nil), p.checks...)
		ok, reason, err = approval(func() (any, error) { return f(ctx, info, checks) })
	}
	return x.answered(ctx, ok, reason, err, &ApprovalError{Kind: ApprovalSafetyChecks, CallID: p.callID, Index: -1, Subject: subject},
		&ApprovalEvent{Kind: ApprovalSafetyChecks, Index: -1, Checks: p.checks})
}

// before asks BeforeAction, if set, about one action or the final screenshot.
func (x *session) before(ctx context.Context, info ActionInfo) error {
	f := x.opts.BeforeAction
	if f == nil {
		return nil
	}
	summary := info.Action.String()
	if info.IsFinalScreenshot {
		summary = "final screenshot"
	}
	x.event(Event{Kind: EventApprovalAsked, CallID: info.CallID,
		Approval: &ApprovalEvent{Kind: ApprovalBeforeAction, Index: info.Index, Summary: summary}})
	ok, reason, err := approval(func() (any, error) { return f(ctx, info) })
	return x.answered(ctx, ok, reason, err,
		&ApprovalError{Kind: ApprovalBeforeAction, CallID: info.CallID, Index: info.Index, Subject: summary},
		&ApprovalEvent{Kind: ApprovalBeforeAction, Index: info.Index, Summary: summary})
}

// answered reports an approval's outcome. Cancellation wins over an answer:
// a callback that approves after the run was cancelled approves nothing.
func (x *session) answered(ctx context.Context, ok bool, reason string, err error, refusal *ApprovalError, ev *ApprovalEvent) error {
	if ctx.Err() != nil {
		ok, reason = false, "cancelled"
	}
	ev.Approved, ev.Reason = ok, reason
	x.event(Event{Kind: EventApprovalAnswered, CallID: refusal.CallID, Approval: ev})
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
func (x *session) runCall(ctx context.Context, p plan) (responses.ResponseInputItemComputerCallOutputParam, error) {
	var zero responses.ResponseInputItemComputerCallOutputParam
	as := p.actions
	if len(as) == 1 && as[0].Type == actions.Screenshot {
		as = nil
	}
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("cancelled before call %s: %w", p.callID, err)
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
		x.actionEvent(p.callID, i, as, r, r.Error, time.Since(stepStart))
		stepStart = time.Now()
	}}
	if x.opts.BeforeAction != nil {
		hooks.Before = func(ctx context.Context, s computer.Step) error {
			refused = x.beforeStep(ctx, p.callID, as, s)
			if refused == nil {
				x.markAttempted(p.callID)
			}
			stepStart = time.Now()
			return refused
		}
	} else {
		x.markAttempted(p.callID)
	}

	shot, err := x.t.driver.Run(ctx, as, hooks)
	okActions := 0
	for _, r := range results {
		if !r.OK {
			break
		}
		okActions++
	}
	if len(as) > 0 && okActions == len(as) {
		x.completed = append(x.completed, p.callID)
	}
	switch {
	case refused != nil:
		return zero, refused
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
				x.actionEvent(p.callID, i, as, computer.ActionResult{Index: i, Type: string(as[i].Type)}, err.Error(), time.Since(stepStart))
			}
			return zero, fmt.Errorf("call %s action %d (%s): %w", p.callID, i, as[i].Type, withCtx(ctx, err))
		}
		return zero, fmt.Errorf("call %s: screenshot: %w", p.callID, withCtx(ctx, err))
	}
	if len(as) == 0 {
		x.completed = append(x.completed, p.callID)
	}
	x.image = shot.Transform.Image
	x.event(Event{Kind: EventScreenshot, CallID: p.callID, Duration: Duration(time.Since(stepStart)),
		Screenshot: &ScreenshotEvent{Transform: shot.Transform, Bytes: len(shot.PNG), PNG: shot.PNG}})
	return outputParam(p, shot.PNG), nil
}

// beforeStep checks, immediately before a step of a call, that the run is
// still wanted, and asks BeforeAction about it.
func (x *session) beforeStep(ctx context.Context, callID string, as []actions.Action, s computer.Step) error {
	if s.Final {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cancelled before the screenshot of call %s: %w", callID, err)
		}
		return x.before(ctx, ActionInfo{CallID: callID, Index: s.Index, Action: actions.Action{Type: actions.Screenshot}, IsFinalScreenshot: true})
	}
	if s.Index < 0 || s.Index >= len(as) {
		return fmt.Errorf("the driver asked about action %d of a call with %d", s.Index, len(as))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cancelled before call %s action %d: %w", callID, s.Index, err)
	}
	return x.before(ctx, ActionInfo{CallID: callID, Index: s.Index, Action: as[s.Index]})
}

func (x *session) markAttempted(callID string) {
	if n := len(x.attempted); n == 0 || x.attempted[n-1] != callID {
		x.attempted = append(x.attempted, callID)
	}
}

// actionEvent reports one ended action; failure is why it failed.
func (x *session) actionEvent(callID string, i int, as []actions.Action, r computer.ActionResult, failure string, d time.Duration) {
	summary := ""
	if i < len(as) {
		summary = as[i].String()
	}
	ev := &ActionEvent{Index: i, Summary: summary, Result: r}
	if !r.OK {
		ev.Error = failure
		if ev.Error == "" {
			ev.Error = "the driver reported a failure without a reason"
		}
	}
	x.event(Event{Kind: EventAction, CallID: callID, Duration: Duration(d), Action: ev})
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

// outputParam is the computer_call_output answering p: the screenshot as a
// PNG data URL at its original detail, and the approved safety checks.
func outputParam(p plan, pngData []byte) responses.ResponseInputItemComputerCallOutputParam {
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
