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
//     binary frame holding the PNG; a Reply whose Exec has images is
//     followed by one binary frame per image, in order.
//   - Cancel (op "cancel", Target = ID of a running request) stops that
//     request between actions or inside a long one; it has no reply itself.
//   - A batch with Gate set asks before each step (each action, then the
//     screenshot): the server sends Ready with the step's index and runs the
//     step only when the client answers Go (op "go", Target, Index); the
//     client refuses with a cancel. Without Gate the batch runs at once.
package wire

import (
	"encoding/json"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/scaling"
)

// Subprotocol is the websocket subprotocol; its suffix is the protocol version.
const Subprotocol = "agentd.v1"

// Version is the protocol version carried in Hello.
const Version = 1

// Ops of requests (client → server).
const (
	OpBatch      = "batch"       // run Actions in order, then take a screenshot
	OpGo         = "go"          // let request Target run its step Index (a gated batch)
	OpAction     = "action"      // run one Action (or Actions, all checked first, then in order), no screenshot
	OpScreenshot = "screenshot"  // set the view (optional) and return a screenshot
	OpReleaseAll = "release_all" // release every key and button agentd may hold
	OpCancel     = "cancel"      // cancel request Target
	OpExec       = "exec"        // run Code in the session's Python worker (agentd --code)
)

// Ops of messages from the server.
const (
	OpHello    = "hello"
	OpReady    = "ready" // a gated batch waits for OpGo before its step Index
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
	ID      uint64       `json:"id"`
	Op      string       `json:"op"`
	Actions actions.List `json:"actions,omitempty"`
	// Gate makes a batch ask before each step: agentd sends Ready with the
	// step's index (an action, or len(Actions) for the screenshot) and runs
	// it only on the client's Go; a cancel instead stops the batch there.
	Gate bool `json:"gate,omitempty"`
	// Index is the step an OpGo lets run.
	Index  int             `json:"index,omitempty"`
	Action *actions.Action `json:"action,omitempty"`
	View   *View           `json:"view,omitempty"`
	Target uint64          `json:"target,omitempty"`
	// Code and DeadlineMS belong to OpExec: the Python source, and how long
	// it may run (0: agentd's default; see ExecResult).
	Code       string       `json:"code,omitempty"`
	DeadlineMS int64        `json:"deadline_ms,omitempty"`
	Browser    *BrowserCall `json:"browser,omitempty"`
}

// ActionResult reports one performed action: the driver contract's own
// result, so the guest client hands it on as it is.
type ActionResult = computer.ActionResult

// Ready says that a gated batch is about to run step Index and waits for
// the client's OpGo.
type Ready struct {
	Op    string `json:"op"`
	ID    uint64 `json:"id"`
	Index int    `json:"index"`
}

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
	// CodeUnavailable: the request needs a service this agentd was not
	// started with (exec without agentd --code).
	CodeUnavailable = "unavailable"
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
	// Exec is the result of OpExec; each of its Images is followed, in
	// order, by one binary frame holding that PNG.
	Exec *ExecResult `json:"exec,omitempty"`
	// Browser is a browser call's result (OpBrowser).
	Browser json.RawMessage `json:"browser,omitempty"`
	// Handback answers OpAwaitHandback (see operate.go).
	Handback *Handback `json:"handback,omitempty"`
}

// ExecResult is what one exec did. An exception in the code is not an
// error of the request: it is reported in Traceback, and the namespace
// survives it.
type ExecResult struct {
	// Output is what the code printed and logged, in order; a note in
	// square brackets marks what agentd added (a scaled image, a cap).
	Output string `json:"output"`
	// OutputTruncated says Output was cut at agentd's cap.
	OutputTruncated bool `json:"output_truncated,omitempty"`
	// Images are the images of display(), at most agentd's cap.
	Images []ExecImage `json:"images,omitempty"`
	// ImagesDropped counts display() calls beyond the caps.
	ImagesDropped int `json:"images_dropped,omitempty"`
	// Traceback is the uncaught exception's traceback, if any.
	Traceback string `json:"traceback,omitempty"`
	// DurationUS is how long the code ran.
	DurationUS int64 `json:"duration_us"`
	// FreshNamespace says the code ran in a new namespace: variables of
	// earlier calls, if any, are gone.
	FreshNamespace bool `json:"fresh_namespace"`
	// NamespaceLost says the worker was stopped (Stopped says why): the
	// next call starts in a fresh namespace.
	NamespaceLost bool `json:"namespace_lost"`
	// Stopped is why the worker was stopped: "deadline", "taken_over" (a
	// person took the desktop: agentd stopped the code, and Output says
	// so), or "exited" (it ended on its own or crashed). A cancel is an
	// error reply instead.
	Stopped string `json:"stopped,omitempty"`
	// Released lists the keys and buttons the code left held, released
	// when the call ended.
	Released []string `json:"released,omitempty"`
}

// ExecImage describes one PNG of an ExecResult.
type ExecImage struct {
	Width  int `json:"width"`
	Height int `json:"height"`
	Bytes  int `json:"bytes"`
	// ScaledFrom is the size display() was given, when agentd scaled it
	// down to fit the session's view.
	ScaledFrom *scaling.Size `json:"scaled_from,omitempty"`
	// PNG is the image itself: it travels in its own binary frame.
	PNG []byte `json:"-"`
}

// Limits shared by both sides.
const (
	// MaxRequestBytes bounds one client message.
	MaxRequestBytes = 1 << 20
	// MaxReplyBytes bounds one server message (a PNG frame included).
	MaxReplyBytes = 64 << 20
)
