package runner

import (
	"strconv"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// Duration is a time.Duration that encodes in JSON as seconds, so records
// read naturally and carry their unit.
type Duration time.Duration

// MarshalJSON writes the duration as a number of seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// Usage is the token usage of one response.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Totals sums Usage over the completed requests of a run. Incomplete is set
// when a request lacked usage (a completed response without it, or a request
// that failed after it was sent): the sums are then a lower bound.
type Totals struct {
	Usage
	Requests   int  `json:"requests"`
	Incomplete bool `json:"incomplete"`
}

func (t *Totals) add(u *Usage) {
	t.Requests++
	if u == nil {
		t.Incomplete = true
		return
	}
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.TotalTokens += u.TotalTokens
}

// Diagnostic is the record the OnDiagnostic observer gets for each request.
// It never holds raw errors, images, typed text or action arguments, so it
// can be logged or exported as it is.
type Diagnostic struct {
	API   string `json:"api"`   // always "responses"
	Stage string `json:"stage"` // always "request"
	// Reason is the request's real outcome: the response's status
	// ("completed", "incomplete", "failed", ...) or "error" when no
	// response came back.
	Reason string `json:"reason"`
	// Usage is nil when the response carried none.
	Usage *Usage `json:"usage"`
	// CallID is the first local call the response asked for ("" for a
	// final answer); CallIDs are all of them, in order.
	CallID  string   `json:"call_id"`
	CallIDs []string `json:"call_ids"`
	// Member is the toolset's name (WithName), so a host running several
	// toolsets can tell their records apart.
	Member string `json:"member"`
	// Duration is the request's wall time, SDK retries included. Durations of
	// different records may overlap: never add them up to get a run's time.
	Duration Duration `json:"duration"`
}

// EventKind names what an Event reports.
type EventKind string

// The kinds of Event, in the order a step emits them.
const (
	// EventRequest: a request is about to be sent (Step, MaxSteps, CallIDs
	// whose outputs it carries).
	EventRequest EventKind = "request"
	// EventResponse: a response arrived (ResponseID, CallIDs it asks for,
	// Usage, Duration).
	EventResponse EventKind = "response"
	// EventApprovalAsked / EventApprovalAnswered: an approval callback is
	// called / has answered (Approval).
	EventApprovalAsked    EventKind = "approval_asked"
	EventApprovalAnswered EventKind = "approval_answered"
	// EventAction: an action finished, well or not (Action, Duration).
	EventAction EventKind = "action"
	// EventScreenshot: the screenshot answering a call was taken
	// (Screenshot, Duration).
	EventScreenshot EventKind = "screenshot"
	// EventCode: a code call finished (CallID, Code, Duration).
	EventCode EventKind = "code"
	// EventFunction: a function call ended, well or not (Function,
	// Duration).
	EventFunction EventKind = "function"
	// EventFinal: the model's final message (Message).
	EventFinal EventKind = "final"
)

// Event is one step of progress, for display and run records. Events are
// delivered synchronously in the order they happen; an observer that panics
// is ignored and cannot change the run.
type Event struct {
	Kind     EventKind `json:"kind"`
	Time     time.Time `json:"time"`
	Step     int       `json:"step,omitempty"` // request number, from 1; 0 in Execute
	MaxSteps int       `json:"max_steps,omitempty"`
	// ResponseID is the response this event belongs to.
	ResponseID string `json:"response_id,omitempty"`
	// CallID is the call of an action, approval, screenshot or function.
	CallID string `json:"call_id,omitempty"`
	// CallIDs: for a request, the calls it answers; for a response, the
	// local calls it asks for.
	CallIDs    []string         `json:"call_ids,omitempty"`
	Duration   Duration         `json:"duration,omitempty"`
	Usage      *Usage           `json:"usage,omitempty"`
	Action     *ActionEvent     `json:"action,omitempty"`
	Approval   *ApprovalEvent   `json:"approval,omitempty"`
	Screenshot *ScreenshotEvent `json:"screenshot,omitempty"`
	Code       *CodeEvent       `json:"code,omitempty"`
	Function   *FunctionEvent   `json:"function,omitempty"`
	Takeover   *TakeoverEvent   `json:"takeover,omitempty"`
	// Message is the final message (EventFinal).
	Message string `json:"message,omitempty"`
}

// ApprovalCode is what an ApprovalError refused when a code tool's
// callback did not approve a code call (package codetool).
const ApprovalCode = "code"

// CodeEvent describes a finished code call (EventCode). It carries no code
// and no output, only their size.
type CodeEvent struct {
	Lines       int    `json:"lines"`
	OutputBytes int    `json:"output_bytes"`
	Images      int    `json:"images"`
	Raised      bool   `json:"raised"`
	Fresh       bool   `json:"fresh_namespace"`
	Lost        bool   `json:"namespace_lost"`
	Stopped     string `json:"stopped,omitempty"`
}

// ActionEvent describes a finished action.
type ActionEvent struct {
	Index int `json:"index"`
	// Summary is the action in short (actions.Action.String): typed text is
	// never included, only its length.
	Summary string `json:"summary"`
	// Path is a drag's path, every point (the summary names the first and
	// the last only): coordinates, never text.
	Path   []actions.Point       `json:"path,omitempty"`
	Result computer.ActionResult `json:"result"`
	// Error is why the action failed ("" when it succeeded).
	Error string `json:"error,omitempty"`
}

// FunctionEvent describes an ended function call. It holds neither the
// arguments nor the output.
type FunctionEvent struct {
	Name string `json:"name"`
	// Supplied is set when RunControl.SupplyOutputs answered the call.
	Supplied bool `json:"supplied,omitempty"`
	// Error is "failed" when the function failed, panicked or returned an
	// invalid output ("" when it succeeded).
	Error string `json:"error,omitempty"`
}

// ApprovalEvent describes an approval asked or answered.
type ApprovalEvent struct {
	Kind  string `json:"kind"` // ApprovalSafetyChecks or ApprovalBeforeAction
	Index int    `json:"index"`
	// Summary is the action in short, or "final screenshot" (before_action).
	Summary string        `json:"summary,omitempty"`
	Checks  []SafetyCheck `json:"checks,omitempty"`
	// Approved and Reason are set when answered.
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
}

// ScreenshotEvent describes the screenshot that answers a call.
type ScreenshotEvent struct {
	Transform scaling.Transform `json:"transform"`
	Bytes     int               `json:"bytes"`
	// PNG is the image sent to the model. It is not encoded in JSON; a
	// Record stores it in a file and names it in File.
	PNG  []byte `json:"-"`
	File string `json:"file,omitempty"`
}
