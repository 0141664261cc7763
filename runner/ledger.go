package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// Ledger receives a run's checkpoints (docs/design.md, "Ledger and resume"): a pending one before each
// request, one when a response with calls arrives, and one before and one
// after every local call. Each Save gets an
// independent, complete copy; *ledger.File is the default, crash-safe one.
type Ledger interface {
	Save(data []byte) error
}

// The phases of a checkpoint.
const (
	PhaseRequest    = "request"     // the request Step is about to be sent
	PhaseResponse   = "response"    // Step's response came with calls; none has started
	PhaseBeforeCall = "before_call" // CallID is about to run: if nothing follows, it is uncertain
	PhaseAfterCall  = "after_call"  // CallID completed
)

// CheckpointVersion is the version of the checkpoint format.
const CheckpointVersion = 1

// Checkpoint is one complete copy of a run's state.
type Checkpoint struct {
	Version  int    `json:"version"`
	Phase    string `json:"phase"`
	Step     int    `json:"step"`
	MaxSteps int    `json:"max_steps"`
	// PreviousResponseID and Input are the pending request's (phase
	// request), or the last one's. Without storage Input is the whole
	// history.
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Input              json.RawMessage `json:"input"`
	// ResponseID is the last response received ("" before the first):
	// without storage, the only record of the response the pending
	// request continues from.
	ResponseID string `json:"response_id,omitempty"`
	// Response is the response being answered and CallID the call the
	// phase is about (call phases).
	Response json.RawMessage `json:"response,omitempty"`
	CallID   string          `json:"call_id,omitempty"`
	// Outputs are the answers of the response's completed calls so far.
	Outputs   []json.RawMessage `json:"outputs,omitempty"`
	Attempted []string          `json:"attempted_call_ids,omitempty"`
	Completed []string          `json:"completed_call_ids,omitempty"`
	Usage     Totals            `json:"usage"`
	// ImageSpace is the size of the screenshot the model saw last.
	ImageSpace scaling.Size `json:"image_space"`
}

// LoadCheckpoint decodes a checkpoint a Ledger saved.
func LoadCheckpoint(data []byte) (*Checkpoint, error) {
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if cp.Version != CheckpointVersion {
		return nil, fmt.Errorf("checkpoint: version %d, this runner reads %d", cp.Version, CheckpointVersion)
	}
	return &cp, nil
}

// ErrUncertain means a checkpoint was taken just before a call ran, so the
// call may have been performed without its completion being recorded, and
// no RunOptions.Reconcile said whether it was.
var ErrUncertain = errors.New("a call of the checkpoint was attempted and is not known to be completed")

// Reconciliation is a caller's answer about an Uncertain call, after
// looking at the real desktop (or whatever the call acts on).
type Reconciliation string

const (
	// Done: the call's effects happened. It counts as completed and is
	// not run again; its output is a fresh screenshot (computer calls) or
	// a text saying the call ran and its result was not recorded.
	Done Reconciliation = "done"
	// NotDone: the call had no effect. It runs again, approvals first.
	NotDone Reconciliation = "not-done"
)

// Uncertain is a call that a checkpoint says was about to run (its
// before_call checkpoint has no after_call): it may or may not have been
// performed.
type Uncertain struct {
	Step       int
	ResponseID string
	CallID     string
	// Type is the output item's type (computer_call, function_call, ...).
	Type string
	// Actions are a computer call's actions.
	Actions []actions.Action
	// Name and Arguments are a function call's.
	Name, Arguments string
}

// Uncertain returns the call cp leaves uncertain, or nil if there is none.
// An MCP approval request is never uncertain: answering it has no local
// effect, so it is simply asked again.
func (cp *Checkpoint) Uncertain() (*Uncertain, error) {
	if cp.Phase != PhaseBeforeCall {
		return nil, nil
	}
	resp, err := cp.response()
	if err != nil {
		return nil, err
	}
	for _, item := range resp.Output {
		if item.CallID != cp.CallID || item.CallID == "" {
			continue
		}
		u := &Uncertain{Step: cp.Step, ResponseID: resp.ID, CallID: cp.CallID, Type: item.Type}
		switch item.Type {
		case "computer_call":
			for i, raw := range item.Actions {
				a, err := actions.Decode([]byte(raw.RawJSON()))
				if err != nil {
					return nil, fmt.Errorf("checkpoint: call %s action %d: %w", cp.CallID, i, err)
				}
				u.Actions = append(u.Actions, a)
			}
		case "function_call":
			fc := item.AsFunctionCall()
			u.Name, u.Arguments = fc.Name, fc.Arguments
		}
		return u, nil
	}
	for _, item := range resp.Output {
		if item.Type == "mcp_approval_request" && item.ID == cp.CallID {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("checkpoint: call %s is not in response %s", cp.CallID, resp.ID)
}

// response decodes the response a call-phase checkpoint is about.
func (cp *Checkpoint) response() (*responses.Response, error) {
	if len(cp.Response) == 0 {
		return nil, fmt.Errorf("checkpoint: phase %s of step %d has no response", cp.Phase, cp.Step)
	}
	var resp responses.Response
	if err := json.Unmarshal(cp.Response, &resp); err != nil {
		return nil, fmt.Errorf("checkpoint: response: %w", err)
	}
	return &resp, nil
}

// batch is the response a resumed run stopped in, with what the
// checkpoint says of its calls.
type batch struct {
	resp *responses.Response
	// outputs answer the calls completed before the stop, in order.
	outputs responses.ResponseInputParam
	// uncertain is the call after them that may have run, and answer the
	// caller's reconciliation of it.
	uncertain string
	answer    Reconciliation
}

// resumeFrom sets a run's options to continue from cp with the remaining
// request budget and the completed history: from the pending request
// (phase request), or inside the response's calls (the other phases),
// where the calls completed keep their recorded outputs, the uncertain one
// is answered by Reconcile and the calls not yet started run. A checkpoint
// never authorizes running an uncertain call again: only NotDone does.
func resumeFrom(ctx context.Context, cp *Checkpoint, opts *RunOptions) (*session, error) {
	var b *batch
	switch cp.Phase {
	case PhaseRequest:
	case PhaseResponse, PhaseBeforeCall, PhaseAfterCall:
		resp, err := cp.response()
		if err != nil {
			return nil, err
		}
		if resp.Status != responses.ResponseStatusCompleted {
			// Taken while the response streamed (Streaming.Eager): its later
			// calls are unknown, so the batch cannot be finished.
			return nil, fmt.Errorf("%w: response %s was still arriving (status %q) when call %s ran; reconcile on the real desktop and start a new run from there",
				ErrUncertain, resp.ID, resp.Status, cp.CallID)
		}
		b = &batch{resp: resp}
		for _, raw := range cp.Outputs {
			b.outputs = append(b.outputs, param.Override[responses.ResponseInputItemUnionParam](raw))
		}
		u, err := cp.Uncertain()
		if err != nil {
			return nil, err
		}
		if u != nil {
			if opts.Reconcile == nil {
				return nil, fmt.Errorf("%w (call %s of step %d): set a reconciliation after checking the desktop", ErrUncertain, cp.CallID, cp.Step)
			}
			answer, err := opts.Reconcile(ctx, *u)
			if err != nil {
				return nil, fmt.Errorf("reconciling call %s: %w", cp.CallID, err)
			}
			if answer != Done && answer != NotDone {
				return nil, fmt.Errorf("reconciling call %s: the answer is %q, want %q or %q", cp.CallID, answer, Done, NotDone)
			}
			b.uncertain, b.answer = u.CallID, answer
		}
	default:
		return nil, fmt.Errorf("checkpoint: unknown phase %q", cp.Phase)
	}
	var input responses.ResponseInputParam
	if len(cp.Input) > 0 && string(cp.Input) != "null" {
		var raw []json.RawMessage
		if err := json.Unmarshal(cp.Input, &raw); err != nil {
			return nil, fmt.Errorf("checkpoint input: %w", err)
		}
		for _, r := range raw {
			input = append(input, param.Override[responses.ResponseInputItemUnionParam](r))
		}
	}
	opts.InputItems, opts.Input, opts.PreviousResponseID = input, "", cp.PreviousResponseID
	opts.MaxSteps = cp.MaxSteps
	last := cp.ResponseID
	if last == "" {
		last = cp.PreviousResponseID
	}
	return &session{step: cp.Step - 1, responseID: last, attempted: cp.Attempted, completed: cp.Completed, usage: cp.Usage, batch: b}, nil
}

// Resume continues a run from its checkpoint cp with the same tools; opts
// and calls are the run's options (model, tools, callbacks; the computer's
// image space is the checkpoint's unless calls set it) and opts.Ledger goes on
// receiving checkpoints. A checkpoint inside a response's calls resumes
// there without asking the model again; an uncertain call is first put to
// opts.Reconcile (ErrUncertain without it). Approvals are asked again for
// every call that runs after the resume. See resumeFrom.
//
// Before the run goes on, Resume takes a screenshot through the driver:
// the Driver contract maps a call's coordinates in the image space of the
// last screenshot Run returned, and a driver new to the run (a new agentd
// session) has returned none. A screenshot whose size is not the
// checkpoint's image space is refused before anything acts: the model's
// coordinates would land elsewhere.
func (t *Toolset) Resume(ctx context.Context, cp *Checkpoint, opts RunOptions, calls CallOptions) (*RunResult, error) {
	x, err := resumeFrom(ctx, cp, &opts)
	if err != nil {
		return nil, &RunError{Err: err}
	}
	shot, err := t.driver.Run(ctx, nil, computer.Hooks{})
	if err != nil {
		return nil, &RunError{Err: fmt.Errorf("screenshot before resuming: %w", err)}
	}
	if img := shot.Transform.Image; cp.ImageSpace != (scaling.Size{}) && img != cp.ImageSpace {
		return nil, &RunError{Err: fmt.Errorf("the model saw %dx%d screenshots, but the driver's view gives %dx%d: resume in the run's view",
			cp.ImageSpace.W, cp.ImageSpace.H, img.W, img.H)}
	}
	if calls.ImageSpace == (scaling.Size{}) {
		calls.ImageSpace = cp.ImageSpace
	}
	opts.resume = x
	return t.Run(ctx, opts, calls)
}

// Resume is Toolset.Resume for a Runner.
func (r *Runner) Resume(ctx context.Context, cp *Checkpoint, opts RunOptions) (*RunResult, error) {
	x, err := resumeFrom(ctx, cp, &opts)
	if err != nil {
		return nil, &RunError{Err: err}
	}
	opts.resume = x
	return r.Run(ctx, opts)
}

// reenter takes a resumed run back into the response it stopped in. calls
// are the response's calls, prepared again; the first len(b.outputs)
// completed before the stop and keep their outputs. An uncertain call
// reconciled Done is answered without running it (and checkpointed as
// completed); NotDone leaves it to run. It returns the outputs so far and
// the calls still to run, which go through approval as any call does.
func (b *batch) reenter(ctx context.Context, s *Step, calls []Call, save func(phase, callID string, outputs responses.ResponseInputParam) error) (responses.ResponseInputParam, []Call, error) {
	done := len(b.outputs)
	if done > len(calls) {
		return nil, nil, fmt.Errorf("checkpoint: %d outputs for the %d calls of response %s", done, len(calls), b.resp.ID)
	}
	outputs := slices.Clip(b.outputs)
	if b.uncertain == "" {
		return outputs, calls[done:], nil
	}
	if done == len(calls) || calls[done].CallID() != b.uncertain {
		return nil, nil, fmt.Errorf("checkpoint: call %s is not call %d of response %s", b.uncertain, done, b.resp.ID)
	}
	if b.answer == NotDone {
		return outputs, calls[done:], nil
	}
	c := calls[done]
	out, err := answerDone(ctx, s, c)
	if err != nil {
		return nil, nil, err
	}
	outputs = append(outputs, out)
	if err := save(PhaseAfterCall, c.CallID(), outputs); err != nil {
		return nil, nil, err
	}
	return outputs, calls[done+1:], nil
}

// answerDone answers a call reconciled as performed, without performing
// it (DoneAnswerer).
func answerDone(ctx context.Context, s *Step, c Call) (responses.ResponseInputItemUnionParam, error) {
	if d, ok := c.(DoneAnswerer); ok {
		return d.AnswerDone(ctx, s)
	}
	return responses.ResponseInputItemUnionParam{}, fmt.Errorf("call %s was reconciled as done, but a %T cannot be answered without running it", c.CallID(), c)
}

// checkpoint saves the run's state, if a ledger is set. A failed save stops
// the run: continuing would leave effects no checkpoint knows of.
func (l *loop) checkpoint(x *session, led Ledger, cp Checkpoint, params *responses.ResponseNewParams) error {
	if led == nil {
		return nil
	}
	cp.Version, cp.Step, cp.MaxSteps = CheckpointVersion, x.step, x.maxSteps
	cp.Attempted, cp.Completed, cp.Usage = x.attempted, x.completed, x.usage
	cp.ResponseID = x.responseID
	if params.PreviousResponseID.Valid() {
		cp.PreviousResponseID = params.PreviousResponseID.Value
	}
	input := params.Input.OfInputItemList
	if input == nil && params.Input.OfString.Valid() {
		input = responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(params.Input.OfString.Value, responses.EasyInputMessageRoleUser)}
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	cp.Input = raw
	for _, t := range l.tools {
		if is, ok := t.(ImageSpacer); ok {
			cp.ImageSpace = is.ImageSpace()
		}
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := led.Save(data); err != nil {
		return fmt.Errorf("checkpoint of step %d (%s): %w", x.step, cp.Phase, err)
	}
	return nil
}
