package wire

import (
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
)

// The operator role: a person driving the desktop in place of the model
// (the console's "Take over"). A connection to OperatePath with the same
// token and the subprotocol OperateSubprotocol sends OperatorRequests and
// gets one Reply each (op done or error; Lease set on every reply).
//
//   - OpTake takes the lease: from then until OpHandBack, agentd refuses
//     every request of the controller but OpReleaseAll and OpAwaitHandback
//     with CodeTakenOver. A refused request did nothing and is not queued.
//     An action of the controller that is already running finishes first.
//     A lease held by another operator connection is refused (CodeBusy); a
//     lease whose operator went away (Orphaned) may be taken.
//   - OpInput runs one action (Action, in screen pixels) for the lease
//     holder; anyone else gets CodeNotHolding.
//   - OpHandBack ends the lease with an optional Note for the model.
//
// When the operator holding the lease disconnects, the lease stays held
// (fail safe: the model does not get the desktop back without a person
// saying so); agentd releases every key and button and marks the lease
// Orphaned until an operator takes it again and hands it back.
//
// The controller waits for the hand back with OpAwaitHandback: the reply
// comes once no lease is held and carries, in Handback, every hand back
// since the controller's last OpAwaitHandback. Until it has collected them
// its actions and screenshots stay refused (CodeTakenOver): what it saw
// of the desktop before is out of date.
//
// A lease belongs to the controller session during which it was taken:
// agentd tells that session, unasked, with a LeaseEvent when the lease is
// taken and when it is handed back, whatever the session is doing, and its
// hand back goes to that session alone. A hand back that session never
// collected, or made after it ended, is dropped: it never reaches another
// session.
const (
	OperatePath        = "/v1/operate"
	OperateSubprotocol = "agentd.operate.v1"
	OpTake             = "take"
	OpInput            = "input"
	OpHandBack         = "hand_back"
	// OpAwaitHandback is a controller request (see above).
	OpAwaitHandback = "await_handback"
	// OpLease is agentd's LeaseEvent to the controller (see above).
	OpLease = "lease"
	// CodeTakenOver: a person holds the desktop; the request was refused.
	CodeTakenOver = "taken_over"
	// CodeNotHolding: an operator's input or hand back without the lease.
	CodeNotHolding = "not_holding"
	// MaxOperators bounds the operator connections of one agentd.
	MaxOperators = 4
	// MaxNoteLen bounds a hand back's note, in bytes.
	MaxNoteLen = 2000
	// MaxHandbackActions bounds the actions a Handback lists; the rest are
	// counted in More.
	MaxHandbackActions = 200
)

// OperatorRequest is one message of an operator connection.
type OperatorRequest struct {
	ID uint64 `json:"id"`
	Op string `json:"op"`
	// By names who takes the lease (OpTake), for the record: "the console".
	By string `json:"by,omitempty"`
	// Action is an action in screen pixels, as the computer tool writes
	// it (decoded as strictly).
	Action *actions.Action `json:"action,omitempty"`
	Note   string          `json:"note,omitempty"`
}

// Lease is the state of the person's lease, as an operator sees it.
type Lease struct {
	Held bool `json:"held"`
	// Mine: this connection holds it.
	Mine bool `json:"mine,omitempty"`
	// Orphaned: held, but its operator went away.
	Orphaned bool      `json:"orphaned,omitempty"`
	By       string    `json:"by,omitempty"`
	Since    time.Time `json:"since,omitzero"`
}

// OperatorHello is the first message of an operator connection.
type OperatorHello struct {
	Hello
	Lease Lease `json:"lease"`
}

// OperatorReply answers an OperatorRequest.
type OperatorReply struct {
	Op     string        `json:"op"` // OpDone or OpError
	ID     uint64        `json:"id"`
	Error  *Error        `json:"error,omitempty"`
	Result *ActionResult `json:"result,omitempty"`
	Lease  Lease         `json:"lease"`
}

// Handback is what people did while they held the desktop, from one or
// more leases, oldest first: the driver contract's own type (actions in
// screen pixels, typed text by its length only; More counts those past
// MaxHandbackActions).
type Handback = computer.Handback

// LeaseEvent tells the controller session, unasked, that a person took the
// desktop (Held, By) or handed it back (the hand back itself is collected
// with OpAwaitHandback). It can come between any two messages of a
// request, never between a Reply and its binary frames.
type LeaseEvent struct {
	Op   string `json:"op"` // OpLease
	Held bool   `json:"held"`
	By   string `json:"by,omitempty"`
}
