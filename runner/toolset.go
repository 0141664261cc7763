// Package runner is the host side of a Responses API run: a general tool
// runner (the seeds' ResponsesToolRunner) in which the computer toolset (over
// a computer.Driver: the guest client, or any desktop that implements the
// contract) is one Tool among function tools, server tools and MCP servers,
// enforcing the rules of docs/design.md, "The tool runner".
//
//   - Every output item of a response is claimed by exactly one Tool or is
//     a message; anything else stops the run with an error naming the
//     item's type. A response ends the run only when it has no local call
//     and carries a message whose phase is not commentary; a response whose
//     status is not completed stops the run with its reason.
//   - Prepare, approve, execute: every call of a response is validated,
//     then every approval is asked, then the calls run in the model's
//     order. Nothing runs unless all of it may.
//   - Approvals fail closed. Pending safety checks need ApproveSafetyChecks
//     to return exactly true (the bool true, as an any) before any action of
//     that call runs; BeforeAction, when set, must approve each action and
//     the final screenshot the same way. Nothing the model says counts.
//     Callbacks get deep copies of what they are shown.
//   - Every action of a computer call is decoded strictly (actions.Decode)
//     and its points checked against the last screenshot sent to the model
//     before any of it runs. Bad input stops the run with a *BadInputError
//     naming the call and the action. It is never reported back to the
//     model: a computer_call_output can only carry a screenshot, so
//     answering would tell the model its actions ran.
//   - MaxSteps bounds API requests; the last allowed request starts no
//     effects. One run or call at a time: a concurrent one fails with
//     ErrBusy. Cancellation reaches the driver and the callbacks, and errors
//     say which calls were attempted and which completed (*RunError).
//   - Iterate steps through a run turn by turn: each completed response is
//     shown before its deferred calls run and before the next request, and
//     leaving the loop stops the run there (ErrStopped).
//   - SDK retries only repeat HTTP requests; local calls run between
//     requests, so a retry never repeats an effect.
package runner

import (
	"context"
	"fmt"

	"github.com/agentd-dev/agentd/internal/onerun"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// Driver runs computer calls on one desktop (see package computer);
// *guest.Client satisfies it, and computer.Sequential makes one of anything
// that performs single actions and takes screenshots.
type Driver = computer.Driver

// Status is a Toolset's lifecycle state.
type Status string

// The states of a Toolset.
const (
	// StatusOpen accepts runs and calls.
	StatusOpen Status = "open"
	// StatusDraining: closed, but a run or call may still have effects on
	// the desktop. Wait for it to return before handing the desktop on.
	StatusDraining Status = "draining"
	// StatusClosed: closed and nothing is running.
	StatusClosed Status = "closed"
)

// SafetyCheck is a pending safety check of a computer call.
type SafetyCheck struct {
	ID      string `json:"id"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// CallInfo describes a computer call to an approval callback. Its actions are
// already decoded and validated.
type CallInfo struct {
	ResponseID string // "" in Execute
	CallID     string
	Actions    []actions.Action
}

// ActionInfo describes the action BeforeAction is asked about.
type ActionInfo struct {
	CallID string
	// Index is the action's position in its call; for the final screenshot it
	// is len(actions), or 0 for a call whose only action is a screenshot.
	Index  int
	Action actions.Action
	// IsFinalScreenshot is set for the screenshot that answers the call.
	IsFinalScreenshot bool
	// Actions are the call's actions, in order (a copy): what the person
	// asked sees around the one asked about.
	Actions []actions.Action
}

// CallOptions govern the computer toolset's calls, in a run (Toolset.Run,
// Iterate, Resume) or one by one (Execute); the run's observer is not
// among them (RunOptions.OnEvent). Both approval callbacks return (any,
// error) on purpose: only the value true of type bool approves; false, nil,
// any other value or type (a string "true", 1, a named bool type), an error
// or a panic refuses. Callbacks receive the run's context and are waited
// for; they should return when it is done.
type CallOptions struct {
	// ApproveSafetyChecks is asked before any action of a call that has
	// pending safety checks. Without it such a call is refused.
	ApproveSafetyChecks func(ctx context.Context, call CallInfo, checks []SafetyCheck) (any, error)
	// BeforeAction, if set, is asked immediately before each action and
	// before the final screenshot; a refusal stops the run before it.
	BeforeAction func(ctx context.Context, a ActionInfo) (any, error)
	// ImageSpace is the size of the screenshot the model saw last when the
	// caller sent it (for example in a run's input, or before Execute): the
	// space of the model's next coordinates. Zero means the last screenshot
	// this toolset sent.
	ImageSpace scaling.Size
}

// Toolset runs computer calls on one Driver, one run or call at a time.
type Toolset struct {
	responses      responses.ResponseService
	driver         Driver
	name           string
	requestOptions []option.RequestOption

	gate onerun.Gate

	// image is the image space of the last screenshot Execute returned; it
	// is only touched by the one Execute that holds the toolset.
	image scaling.Size
}

// Option configures a Toolset.
type Option func(*Toolset)

// WithName names the toolset in diagnostics (Diagnostic.Member). The default
// is "computer".
func WithName(name string) Option { return func(t *Toolset) { t.name = name } }

// WithRequestOptions adds SDK request options to every Responses request
// (for example option.WithMaxRetries or a request timeout).
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(t *Toolset) { t.requestOptions = append(t.requestOptions, opts...) }
}

// New returns a Toolset that asks client's Responses API and acts through d.
// Closing the toolset never closes d: whoever created the guest tears it down.
func New(client openai.Client, d Driver, opts ...Option) *Toolset {
	t := &Toolset{responses: client.Responses, driver: d, name: "computer"}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Status reports whether the toolset is open, draining or closed.
func (t *Toolset) Status() Status { return Status(t.gate.State()) }

// Close refuses new runs and calls. It does not cancel a run in progress
// (cancel its context for that) and never stops the guest. It always
// returns nil.
func (t *Toolset) Close() error {
	t.gate.Close()
	return nil
}

// approval runs one approval callback and decides, failing closed. A panic
// is a refusal, not a crash of the caller's program.
func approval(f func() (any, error)) (ok bool, reason string, err error) {
	defer func() {
		if p := recover(); p != nil {
			ok, reason, err = false, fmt.Sprintf("callback panicked: %v", p), nil
		}
	}()
	v, err := f()
	switch {
	case err != nil:
		return false, "callback failed", err
	case v == true:
		return true, "approved", nil
	case v == false:
		return false, "refused", nil
	case v == nil:
		return false, "callback returned nil, not true", nil
	}
	return false, fmt.Sprintf("callback returned a %T, not exactly true", v), nil
}

// observe calls an observer, ignoring its panics: observers can neither
// approve anything nor change a run's result.
func observe[T any](f func(T), v T) {
	if f == nil {
		return
	}
	defer func() { _ = recover() }()
	f(v)
}
