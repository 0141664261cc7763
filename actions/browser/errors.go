package browser

import (
	"errors"
	"fmt"
	"strings"
)

// BrowserError is a recoverable problem a driver reports, such as a stale
// ref. Its Message is shown to the model as it is, so it must be safe to
// show; the call's output still carries the state, and the response's
// remaining browser calls go on.
type BrowserError struct {
	Message string
}

func (e *BrowserError) Error() string { return e.Message }

// NewBrowserError returns a *BrowserError with message msg.
func NewBrowserError(msg string) error { return &BrowserError{Message: msg} }

// Errors of the toolset's lifecycle.
var (
	// ErrBusy is returned at once by a Run while another Run of the same
	// toolset is in progress. Nothing is queued.
	ErrBusy = errors.New("busy: another browser batch of this toolset is running")
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("browser toolset is closed")
	// ErrStateUnavailable is matched (errors.Is) when a required state read
	// failed; it stops the run.
	ErrStateUnavailable = errors.New("browser state could not be read")
	// ErrConsentFailed is matched (errors.Is) when the confirm or URL
	// policy callback failed (returned an error or panicked) rather than
	// answering; it stops the run and nothing of that call ran.
	ErrConsentFailed = errors.New("browser consent callback failed")
)

// StopError stops a run: a driver result or state broke the contract
// (ErrInvalidResult, ErrInvalidState), a required state read failed
// (ErrStateUnavailable), a consent callback failed (ErrConsentFailed), or
// the context ended. Use errors.Is on it.
type StopError struct {
	CallID string
	Member Member
	// Attempted says the driver method of the call was invoked, so it may
	// have had an effect: check the real page before retrying.
	Attempted bool
	Err       error
}

func (e *StopError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "browser call %s (%s): %v", e.CallID, e.Member, e.Err)
	if e.Attempted {
		b.WriteString(" (the operation was attempted)")
	}
	return b.String()
}

func (e *StopError) Unwrap() error { return e.Err }
