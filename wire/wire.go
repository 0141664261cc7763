// Package wire defines the messages between the host's guest client and
// agentd: JSON text frames for requests and results, one binary frame for each
// screenshot's PNG. Both sides import it so they cannot drift apart.
//
// Protocol (subprotocol Subprotocol):
//   - After the upgrade the server sends Hello.
//   - The client sends Requests, each with a fresh ID. The server runs them one
//     at a time in the order received and answers each with exactly one Reply
//     (op "done" or "error"); a batch also sends one Progress per action as it
//     completes. A Reply whose Screenshot is set is followed at once by one
//     binary frame holding the PNG.
//   - Cancel (op "cancel", Target = ID of a running request) stops that
//     request between actions or inside a long one; it has no reply itself.
package wire

import (
	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// Subprotocol is the websocket subprotocol; its suffix is the protocol version.
const Subprotocol = "agentd.v1"

// Version is the protocol version carried in Hello.
const Version = 1

// Ops of requests (client → server).
const (
	OpBatch      = "batch"       // run Actions in order, then take a screenshot
	OpAction     = "action"      // run one Action, no screenshot
	OpScreenshot = "screenshot"  // set the view (optional) and return a screenshot
	OpReleaseAll = "release_all" // release every key and button agentd may hold
	OpCancel     = "cancel"      // cancel request Target
)

// Ops of messages from the server.
const (
	OpHello    = "hello"
	OpProgress = "progress"
	OpDone     = "done"
	OpError    = "error"
)

// Hello is the first message of a session.
type Hello struct {
	Op           string       `json:"op"`
	Version      int          `json:"version"`
	Screen       scaling.Size `json:"screen"`
	Capabilities []string     `json:"capabilities"`
}

// View says how screenshots are made and how action coordinates are read:
// actions are in the image space of the current view. The zero View is the
// whole screen at native size.
type View struct {
	// Crop is the part of the screen to show; nil means the whole screen.
	Crop *scaling.Rect `json:"crop,omitempty"`
	// Width and Height bound the image; zero means the crop's own size.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Fit keeps the aspect ratio, fitting within Width×Height; otherwise the
	// image is exactly Width×Height.
	Fit bool `json:"fit,omitempty"`
}

// Request is one client message.
type Request struct {
	ID      uint64           `json:"id"`
	Op      string           `json:"op"`
	Actions []actions.Action `json:"actions,omitempty"`
	Action  *actions.Action  `json:"action,omitempty"`
	View    *View            `json:"view,omitempty"`
	Target  uint64           `json:"target,omitempty"`
}

// ActionResult reports one performed action: the driver contract's own
// result, so the guest client hands it on as it is.
type ActionResult = computer.ActionResult

// Progress is sent as each action of a batch completes.
type Progress struct {
	Op     string       `json:"op"`
	ID     uint64       `json:"id"`
	Result ActionResult `json:"result"`
}

// ScreenshotMeta describes the PNG in the binary frame that follows.
type ScreenshotMeta struct {
	Transform scaling.Transform `json:"transform"`
	Bytes     int               `json:"bytes"`
	CaptureUS int64             `json:"capture_us"`
	EncodeUS  int64             `json:"encode_us"`
}

// Error codes carried in Reply.Error.Code.
const (
	CodeBadRequest = "bad_request" // malformed or invalid; nothing ran
	CodeFailed     = "failed"      // an action failed; see FailedIndex
	CodeCancelled  = "cancelled"
	CodeTimeout    = "timeout"
	CodeBusy       = "busy"
	CodeInternal   = "internal" // display or input trouble; message is safe to show
)

// Error is what crosses the wire when something fails: a code and a message
// safe to show to a user.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// FailedIndex is the index of the action that failed (-1 if none ran).
	FailedIndex int `json:"failed_index"`
}

// Reply ends a request.
type Reply struct {
	Op         string          `json:"op"` // OpDone or OpError
	ID         uint64          `json:"id"`
	Results    []ActionResult  `json:"results,omitempty"`
	Error      *Error          `json:"error,omitempty"`
	Screenshot *ScreenshotMeta `json:"screenshot,omitempty"`
}

// Limits shared by both sides.
const (
	// MaxRequestBytes bounds one client message.
	MaxRequestBytes = 1 << 20
	// MaxReplyBytes bounds one server message (a PNG frame included).
	MaxReplyBytes = 64 << 20
)
