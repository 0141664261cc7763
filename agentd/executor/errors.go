package executor

import (
	"errors"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/input"
)

// Error is the error of a failed Do. Its message names the action and says
// why, device detail included, for the operator's log; Public is the part
// safe to show any client.
type Error struct {
	// Action is the failed action's type; "" for an invalid action, whose
	// message names its type already.
	Action actions.Type
	Err    error
}

func (e *Error) Error() string {
	if e.Action == "" {
		return e.Err.Error()
	}
	return string(e.Action) + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Public is the message without what the device said: an action the
// executor refused or that was cancelled is described in full (it is about
// the request), a device failure only by what was being done.
func (e *Error) Public() string {
	var de *DeviceError
	if !errors.As(e.Err, &de) {
		return e.Error()
	}
	if e.Action == "" {
		return de.Public()
	}
	return string(e.Action) + ": " + de.Public()
}

// DeviceError is a failure of the input device or the screen under an
// action (an X error, a lost display), as opposed to an action refused.
type DeviceError struct {
	// What is what was being done, e.g. "press key Shift_L": safe to show.
	What string
	// Err is what the device said: detail for the log (X error codes,
	// display names), never for a client.
	Err error
}

func (e *DeviceError) Error() string { return e.What + ": " + e.Err.Error() }

func (e *DeviceError) Unwrap() error { return e.Err }

// Public says what was being done and, when the display went away, that it
// did (input.ErrDisplayLost's message): a client can wait for it to return.
func (e *DeviceError) Public() string {
	if errors.Is(e.Err, input.ErrDisplayLost) {
		return e.What + ": " + input.ErrDisplayLost.Error()
	}
	return e.What + " failed"
}
