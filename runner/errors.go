package runner

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBusy is returned at once when Run or Execute is called while another
// run or call of the same Toolset is in progress. Nothing is queued.
var ErrBusy = errors.New("busy: another run or call of this toolset is in progress")

// ErrClosed is returned by Run and Execute after Close.
var ErrClosed = errors.New("toolset is closed")

// ErrStepLimit is wrapped by the error of a run whose last allowed request
// still asked for actions; those actions were not executed.
var ErrStepLimit = errors.New("step limit reached")

// ErrNotApproved is matched (errors.Is) by every *ApprovalError.
var ErrNotApproved = errors.New("not approved")

// RunError is the error of Run and Execute. It says which computer calls had
// at least one action sent to the driver (attempted) and which had all of
// their actions complete (completed), so the caller can check the real state
// of the desktop before retrying anything: an action already sent cannot be
// undone. Err is the cause; use errors.Is / errors.As on the RunError itself.
type RunError struct {
	Err error
	// ResponseID is the last response received, if any.
	ResponseID string
	// Steps is the number of requests sent (0 for Execute).
	Steps            int
	AttemptedCallIDs []string
	CompletedCallIDs []string
	// Usage sums the completed requests, as RunResult.Usage does.
	Usage Totals
}

func (e *RunError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if len(e.AttemptedCallIDs) > 0 {
		fmt.Fprintf(&b, " (attempted calls: %s; completed calls: %s)",
			strings.Join(e.AttemptedCallIDs, ", "), orNone(e.CompletedCallIDs))
	}
	return b.String()
}

func (e *RunError) Unwrap() error { return e.Err }

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// BadInputError is a computer call the model got wrong: an unknown action
// type, a missing or unexpected field, a point off the image, a drag with
// fewer than two points, an unknown key. It is found before any action of
// the call runs, so nothing of that call (or after it) was executed.
type BadInputError struct {
	CallID string
	// Index is the action's position in the call, or -1 when the call as a
	// whole is wrong (no actions, not completed).
	Index int
	Err   error
}

func (e *BadInputError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("bad input from the model: call %s: %v", e.CallID, e.Err)
	}
	return fmt.Sprintf("bad input from the model: call %s action %d: %v", e.CallID, e.Index, e.Err)
}

func (e *BadInputError) Unwrap() error { return e.Err }

// What an ApprovalError refused.
const (
	ApprovalSafetyChecks = "safety_checks"
	ApprovalBeforeAction = "before_action"
)

// ApprovalError says an approval was not given: the callback was missing,
// said no, failed, panicked, or returned anything but exactly true.
type ApprovalError struct {
	// Kind is ApprovalSafetyChecks or ApprovalBeforeAction.
	Kind   string
	CallID string
	// Index is the refused action (before_action), len(actions) for the
	// final screenshot, or -1 for safety checks.
	Index int
	// Subject describes what was refused (the check ids, or the action in
	// short; never typed text).
	Subject string
	// Reason says why in a few words.
	Reason string
	// Err is the callback's error, if it returned one.
	Err error
}

func (e *ApprovalError) Error() string {
	msg := fmt.Sprintf("%s not approved for call %s (%s): %s", e.Kind, e.CallID, e.Subject, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes every ApprovalError match ErrNotApproved.
func (e *ApprovalError) Is(target error) bool { return target == ErrNotApproved }

func (e *ApprovalError) Unwrap() error { return e.Err }
