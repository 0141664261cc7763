// Package computer is the driver contract of the computer tool: the Driver a
// desktop implements so that the runner can act on it, and the host-safe
// types the two exchange. A driver for a browser, a remote desktop service or
// a test imports this package and actions, never agentd's client, its wire
// protocol or anything that needs cgo or X11.
package computer

import (
	"context"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/scaling"
)

// Driver runs the computer calls of one desktop.
type Driver interface {
	// Run performs the actions of one call in order, their coordinates in
	// the image space of the last screenshot Run returned, stopping at the
	// first failure, and then takes the screenshot that answers the call.
	// An empty list is a call whose only action is a screenshot: just the
	// final screenshot is taken.
	//
	// When h.Before is set, Run asks it immediately before each action and
	// before the final screenshot, and nothing of a step runs until it has
	// returned nil. When it is nil, Run may perform the whole call at once.
	// h.Done, when set, gets each action's result as the action ends.
	//
	// The error is about the last step Run began: the action after the last
	// result given to Done, or the final screenshot once every action has
	// succeeded. An error from Before is wrapped, not replaced.
	Run(ctx context.Context, as []actions.Action, h Hooks) (Screenshot, error)
}

// Step is one step of a call: an action, or the final screenshot.
type Step struct {
	// Index is the action's position in the call; for the final screenshot
	// it is the number of actions.
	Index int
	// Final is set for the final screenshot.
	Final bool
}

// Hooks are the runner's view into a running call.
type Hooks struct {
	// Before is asked immediately before each step; an error stops the call
	// before that step.
	Before func(ctx context.Context, s Step) error
	// Done receives each action's result as it ends, failures included, in
	// order. It runs on the driver's goroutine and must return quickly.
	Done func(r ActionResult)
}

// ActionResult reports one performed action.
type ActionResult struct {
	Index      int    `json:"index"`
	Type       string `json:"type"`
	OK         bool   `json:"ok"`
	Error      string `json:"error,omitempty"`
	DurationUS int64  `json:"duration_us"`
	// ScrollSteps are the wheel steps a scroll turned its pixels into.
	ScrollSteps *actions.Point `json:"scroll_steps,omitempty"`
	// WaitedMS is how long a wait action waited for the screen to settle.
	WaitedMS int64 `json:"waited_ms,omitempty"`
	// Settled is false when a wait hit its bound while the screen still changed.
	Settled *bool `json:"settled,omitempty"`
}

// Screenshot is one PNG image of the desktop and how it was made: the model's
// next coordinates are read in Transform.Image.
type Screenshot struct {
	PNG       []byte
	Transform scaling.Transform
}
