package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/scaling"
)

// Ledger receives a run's checkpoints (docs/design.md, "Ledger and resume"): a pending one before each
// request, and one before and one after every local call. Each Save gets an
// independent, complete copy; *ledger.File is the default, crash-safe one.
type Ledger interface {
	Save(data []byte) error
}

// The phases of a checkpoint.
const (
	PhaseRequest    = "request"     // the request Step is about to be sent
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

// ErrUncertain means a checkpoint was taken inside a response's calls, so
// a call may have been performed without its completion being recorded.
var ErrUncertain = errors.New("the checkpoint is inside a response's calls")

// resumeFrom sets a run's options to continue from cp: the pending request
// with its input, the remaining request budget and the completed history.
// Only a checkpoint at the end of a completed step (phase request) resumes:
// a call phase may hide an action that ran, and a checkpoint never
// authorizes running it again.
func resumeFrom(cp *Checkpoint, opts *RunOptions) (*session, error) {
	if cp.Phase != PhaseRequest {
		return nil, fmt.Errorf("%w (%s of call %s in step %d): reconcile it on the real desktop and start a new run from there",
			ErrUncertain, cp.Phase, cp.CallID, cp.Step)
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
	if opts.ImageSpace == (scaling.Size{}) {
		opts.ImageSpace = cp.ImageSpace
	}
	return &session{step: cp.Step - 1, attempted: cp.Attempted, completed: cp.Completed, usage: cp.Usage}, nil
}

// Resume continues a run from its checkpoint cp with the same tools; opts
// are the run's options (model, tools, callbacks) and opts.Ledger goes on
// receiving checkpoints. See resumeFrom for what resumes.
func (t *Toolset) Resume(ctx context.Context, cp *Checkpoint, opts RunOptions) (*RunResult, error) {
	x, err := resumeFrom(cp, &opts)
	if err != nil {
		return nil, &RunError{Err: err}
	}
	opts.resume = x
	return t.Run(ctx, opts)
}

// Resume is Toolset.Resume for a Runner.
func (r *Runner) Resume(ctx context.Context, cp *Checkpoint, opts RunOptions) (*RunResult, error) {
	x, err := resumeFrom(cp, &opts)
	if err != nil {
		return nil, &RunError{Err: err}
	}
	opts.resume = x
	return r.Run(ctx, opts)
}

// checkpoint saves the run's state, if a ledger is set. A failed save stops
// the run: continuing would leave effects no checkpoint knows of.
func (l *loop) checkpoint(x *session, led Ledger, cp Checkpoint, params *responses.ResponseNewParams) error {
	if led == nil {
		return nil
	}
	cp.Version, cp.Step, cp.MaxSteps = CheckpointVersion, x.step, x.maxSteps
	cp.Attempted, cp.Completed, cp.Usage = x.attempted, x.completed, x.usage
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
		if c, ok := t.(*computerTool); ok {
			cp.ImageSpace = c.image
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
