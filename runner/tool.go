package runner

import (
	"context"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/scaling"
)

// Tool is one tool of a run: the seam between the Responses loop and
// whatever performs the model's calls. The loop handles a response in three
// stages, each over every claimed item in the response's order: Prepare
// (validate; nothing runs unless all of it is valid), Approve (nothing runs
// unless all of it is approved), Execute. The computer toolset, function
// tools, server tools and MCP servers are Tools.
type Tool interface {
	// Params declares the tool to the API; they are sent on every request.
	Params() []responses.ToolUnionParam
	// Claims reports whether an output item is this tool's. Every item of
	// a response is claimed by exactly one tool or is a message.
	Claims(item responses.ResponseOutputItemUnion) bool
	// Prepare validates a claimed item before anything of the response
	// runs. It returns nil for an item that needs no answer (a server
	// tool's result) and an error for one that must stop the turn.
	Prepare(s *Step, item responses.ResponseOutputItemUnion) (Call, error)
}

// Call is a prepared, validated call of one tool.
type Call interface {
	// CallID identifies the call in errors and records.
	CallID() string
	// Approve asks whatever consent the call needs. An error stops the run
	// before any call of the response runs.
	Approve(ctx context.Context, s *Step) error
	// Execute performs the call once and returns the item that answers it.
	// It marks the call attempted before its first effect and completed
	// after its last (Step.Attempted, Step.Completed).
	Execute(ctx context.Context, s *Step) (responses.ResponseInputItemUnionParam, error)
}

// The loop knows no concrete tool: what only some tools do, they say
// through these optional interfaces.

// ImageSpacer is a tool whose calls' coordinates are in the image space of
// the last screenshot it sent the model (the computer toolset). A
// checkpoint keeps that size, so that a resume can refuse a driver whose
// view would put the model's coordinates elsewhere.
type ImageSpacer interface {
	ImageSpace() scaling.Size
}

// LateResulter is a tool whose items may be followed, later in the same
// response, by a result that fails the turn (a server tool). While one is
// declared, no call runs before its response is complete (Streaming.Eager).
type LateResulter interface {
	LateResults() bool
}

// IndependentCall is a call that depends on no other call of its response
// (a function made with Independent): with Streaming.Eager and no ledger it
// may run beside other independent calls.
type IndependentCall interface {
	Independent() bool
}

// DoneAnswerer is a call that can be answered without running it, after a
// resume reconciled it as done (Done): the computer toolset with a fresh
// screenshot, a function or code call with DoneOutput. A call that is not
// one cannot be reconciled as done.
type DoneAnswerer interface {
	AnswerDone(ctx context.Context, s *Step) (responses.ResponseInputItemUnionParam, error)
}

// DoneOutput answers a function-shaped call reconciled as done, marking it
// completed: DoneOutputText, since its result was never recorded and
// running it again could repeat its effects.
func DoneOutput(s *Step, callID string) responses.ResponseInputItemUnionParam {
	s.Completed(callID)
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: openai.String(callID),
		Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(DoneOutputText)},
	}}
}

// DoneOutputText answers a function or code call reconciled as done.
const DoneOutputText = "[this call was performed before the run was interrupted and resumed; its result was not recorded. Call it again if you need the result and repeating it is safe.]"

// Ask asks one approval callback for a call, as the runner's own tools do:
// ev says what is asked (its Kind, Index and Summary) in the run's
// approval events; only the value true of type bool approves, and false,
// any other value, an error or a panic refuses with an *ApprovalError
// naming the call.
func (s *Step) Ask(ctx context.Context, callID string, ev ApprovalEvent, ask func() (any, error)) error {
	asked := ev
	s.Event(Event{Kind: EventApprovalAsked, CallID: callID, Approval: &asked})
	ok, reason, err := approval(ask)
	return answered(ctx, s, ok, reason, err,
		&ApprovalError{Kind: ev.Kind, CallID: callID, Index: ev.Index, Subject: ev.Summary}, &ev)
}

// Step is what a Tool sees of the run while it handles one response.
type Step struct{ x *session }

// ResponseID is the response being handled ("" in Toolset.Execute).
func (s *Step) ResponseID() string { return s.x.responseID }

// Event reports progress to the run's observer; Time, Step and ResponseID
// are filled in.
func (s *Step) Event(ev Event) { s.x.event(ev) }

// Attempted records that an effect of the call was started: it cannot be
// undone, and errors will name it.
func (s *Step) Attempted(callID string) { s.x.markAttempted(callID) }

// Completed records that every effect of the call finished.
func (s *Step) Completed(callID string) {
	s.x.mu.Lock()
	defer s.x.mu.Unlock()
	s.x.completed = append(s.x.completed, callID)
}

// session is the state of one Run or Execute shared by its tools.
type session struct {
	// mu guards attempted, completed and the observer while independent
	// calls run concurrently (Streaming.Eager).
	mu       sync.Mutex
	step     int
	maxSteps int
	// responseID is the last response received.
	responseID string
	attempted  []string
	completed  []string
	usage      Totals
	onEvent    func(Event)
	approveMCP func(context.Context, MCPApprovalRequest) (any, error)
	ctl        *RunControl
	// batch is the response a resumed run re-enters (nil otherwise).
	batch *batch
}

func (x *session) fail(err error) *RunError {
	x.mu.Lock()
	defer x.mu.Unlock()
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
	x.mu.Lock()
	defer x.mu.Unlock()
	observe(x.onEvent, ev)
}

func (x *session) markAttempted(callID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.attempted); n == 0 || x.attempted[n-1] != callID {
		x.attempted = append(x.attempted, callID)
	}
}
