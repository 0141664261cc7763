package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Call is one function call of a response as the model wrote it. The
// caller checks the call is complete (status "completed") before handing it
// over.
type Call struct {
	CallID string
	Name   string
	// Arguments is the call's raw JSON arguments.
	Arguments string
}

// Outcome is how one call of a batch ended.
type Outcome string

// The outcomes of a call.
const (
	// OutcomeOK: the operation completed.
	OutcomeOK Outcome = "ok"
	// OutcomeFileNotCompleted: a file operation returned an outcome other
	// than completed; the rest of the response's browser calls were skipped.
	OutcomeFileNotCompleted Outcome = "file_not_completed"
	// OutcomeBrowserError: the driver reported a recoverable problem, shown
	// to the model.
	OutcomeBrowserError Outcome = "browser_error"
	// OutcomeFailed: the driver failed otherwise; the model was told only
	// that it failed, and the rest of the response's browser calls were
	// skipped.
	OutcomeFailed Outcome = "failed"
	// OutcomeRefused: the URL policy or confirm did not approve; nothing
	// was done.
	OutcomeRefused Outcome = "refused"
	// OutcomeReadRefused: confirm did not approve a confirm_reads read;
	// nothing was read, not even the state.
	OutcomeReadRefused Outcome = "read_refused"
	// OutcomeInvalid: the call's arguments were invalid or its member is
	// not enabled; nothing of the response ran.
	OutcomeInvalid Outcome = "invalid"
	// OutcomeSkipped: not run, because of another call of the response.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeStopped: the call stopped the run (Run's *StopError).
	OutcomeStopped Outcome = "stopped"
)

// CallRecord says what happened to one call, for the application's records
// and diagnostics (the raw Err is never shown to the model unless it is an
// *ArgumentError or a *BrowserError).
type CallRecord struct {
	CallID  string
	Member  Member
	Outcome Outcome
	// Attempted says the driver method was invoked: it may have had an
	// effect even if it failed.
	Attempted bool
	Err       error
	// Duration is the time the call took, consent included.
	Duration time.Duration
}

// Output is one call's function_call_output, independent of any model API
// (runner/browser makes the Responses API's item of it): Text is the JSON
// object {ok, result, error, state}; screenshot and zoom add Image, a
// validated copy of the driver's, after the text.
type Output struct {
	CallID string
	Text   string
	Image  *Image
}

// Result is what Run produced: one output per call, in order, and a record
// of each call handled. After a stopping error it holds what was done
// before the stop; those outputs must not be sent as if the turn completed.
type Result struct {
	Outputs []Output
	Calls   []CallRecord
}

// Batch is the browser calls of one response, decoded and validated. Run it
// once.
type Batch struct {
	t     *BrowserToolset
	calls []preparedCall
	// refused: some call was refused while preparing, so none runs.
	refused bool
	ran     bool
}

type preparedCall struct {
	call Call
	spec *memberSpec
	args Arguments
	// err refuses the call before anything runs: an *ArgumentError or a
	// disabled member.
	err error
}

// Prepare decodes and validates every call of one response before anything
// runs. A call of a member that is not enabled, or with invalid arguments,
// is refused; then no call of the batch runs (each gets an output saying
// so), and the model can choose again. The error is for calls that are not
// this toolset's at all: an empty or repeated call_id, or a name that is no
// browser member.
func (t *BrowserToolset) Prepare(calls []Call) (*Batch, error) {
	b := &Batch{t: t, calls: make([]preparedCall, 0, len(calls))}
	ids := map[string]bool{}
	for i, c := range calls {
		switch {
		case c.CallID == "":
			return nil, fmt.Errorf("browser: call %d (%s) has no call_id", i, c.Name)
		case ids[c.CallID]:
			return nil, fmt.Errorf("browser: call_id %s is repeated", c.CallID)
		}
		ids[c.CallID] = true
		spec, ok := specByName[Member(c.Name)]
		if !ok {
			return nil, fmt.Errorf("browser: call %s: %q is not a browser member", c.CallID, c.Name)
		}
		pc := preparedCall{call: c, spec: spec}
		if !t.enabledSet[spec.name] {
			pc.err = fmt.Errorf("%s is not an enabled browser method", spec.name)
		} else {
			pc.args, pc.err = DecodeArguments(spec.name, []byte(c.Arguments))
		}
		b.refused = b.refused || pc.err != nil
		b.calls = append(b.calls, pc)
	}
	return b, nil
}

// Execute prepares and runs a single call.
func (t *BrowserToolset) Execute(ctx context.Context, c Call) (Result, error) {
	b, err := t.Prepare([]Call{c})
	if err != nil {
		return Result{}, err
	}
	return b.Run(ctx)
}

// The texts the model sees for calls that did not complete.
const (
	msgGenericFailure = "The browser operation failed. The remaining browser calls of this response were skipped."
	msgSkipped        = "Skipped: an earlier browser call of this response did not complete, so nothing was done."
	msgNotRun         = "Not run: another browser call of this response was refused before anything ran."
	msgRefused        = "Refused: the action was not approved. Nothing was done."
	msgURLRefused     = "Refused: the URL policy does not allow this URL. Nothing was done."
	msgReadRefused    = "Refused: reading this page was not approved. Nothing was read."
	msgEmptyBrowser   = "The browser reported a problem."
)

// Run executes the batch's calls in order, one at a time, and returns their
// outputs. A call's output carries the state read after it, even when it
// failed or was refused, except for a refused confirm_reads read. A
// *BrowserError is shown to the model and the next call goes on; any other
// driver error gives a generic failure and skips the response's remaining
// browser calls, as does a file outcome other than completed. Run returns an
// error, a *StopError, when the run must stop: an invalid result or state, a
// failed state read, a failed consent callback, or the end of ctx (checked
// between calls and after every callback and driver method). A concurrent
// Run of the same toolset fails at once with ErrBusy.
func (b *Batch) Run(ctx context.Context) (Result, error) {
	if err := b.t.gate.Acquire(ErrClosed, ErrBusy); err != nil {
		return Result{}, err
	}
	defer b.t.gate.Release()
	if b.ran {
		return Result{}, errors.New("browser: the batch already ran")
	}
	b.ran = true

	var res Result
	add := func(o Output, r CallRecord) {
		res.Outputs = append(res.Outputs, o)
		res.Calls = append(res.Calls, r)
	}
	if b.refused {
		for _, pc := range b.calls {
			rec := CallRecord{CallID: pc.call.CallID, Member: pc.spec.name, Outcome: OutcomeSkipped}
			text := msgNotRun
			if pc.err != nil {
				rec.Outcome, rec.Err, text = OutcomeInvalid, pc.err, pc.err.Error()
			}
			add(textOutput(pc.call.CallID, failure(text)), rec)
		}
		return res, nil
	}
	skipping := false
	for _, pc := range b.calls {
		if skipping {
			add(textOutput(pc.call.CallID, failure(msgSkipped)),
				CallRecord{CallID: pc.call.CallID, Member: pc.spec.name, Outcome: OutcomeSkipped})
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, &StopError{CallID: pc.call.CallID, Member: pc.spec.name, Err: err}
		}
		start := time.Now()
		out, rec, err := b.t.run(ctx, pc)
		rec.CallID, rec.Member, rec.Duration = pc.call.CallID, pc.spec.name, time.Since(start)
		if err != nil {
			rec.Outcome = OutcomeStopped
			res.Calls = append(res.Calls, rec)
			return res, &StopError{CallID: pc.call.CallID, Member: pc.spec.name, Attempted: rec.Attempted, Err: err}
		}
		add(out, rec)
		skipping = rec.Outcome == OutcomeFailed || rec.Outcome == OutcomeFileNotCompleted
	}
	return res, nil
}

// run performs one validated call: consent (URL policy before confirm), the
// driver method, the result's validation, then the state read.
func (t *BrowserToolset) run(ctx context.Context, pc preparedCall) (Output, CallRecord, error) {
	var zero Output
	var rec CallRecord
	id, spec := pc.call.CallID, pc.spec

	// withState reads the state after the operation and makes the output.
	withState := func(b body, image *Image) (Output, CallRecord, error) {
		st, err := t.readState(ctx)
		if err != nil {
			return zero, rec, err
		}
		b.State = &st
		if image != nil {
			return imageOutput(id, b, image), rec, nil
		}
		return textOutput(id, b), rec, nil
	}

	if t.confirmReads[spec.name] {
		ok, err := t.ask(ctx, func() (any, error) {
			return t.confirm(ctx, ConsentRequest{Phase: PhaseBeforeRead, Member: spec.name, Arguments: pc.args.clone(), CallID: id})
		})
		if err != nil {
			return zero, rec, err
		}
		if !ok {
			rec.Outcome = OutcomeReadRefused
			return textOutput(id, failure(msgReadRefused)), rec, nil
		}
	}
	if spec.confirm {
		before, err := t.readState(ctx)
		if err != nil {
			return zero, rec, err
		}
		if u := requestURL(pc.args); spec.urlPolicy && u != nil {
			ok, err := t.ask(ctx, func() (any, error) {
				parsed, _ := requestedURL(*u) // validated by DecodeArguments
				st := before.Clone()
				return t.urlPolicy(ctx, URLPolicyRequest{Member: spec.name, Arguments: pc.args.clone(), State: &st, CallID: id, URL: parsed})
			})
			if err != nil {
				return zero, rec, err
			}
			if !ok {
				rec.Outcome = OutcomeRefused
				return withState(failure(msgURLRefused), nil)
			}
		}
		ok, err := t.ask(ctx, func() (any, error) {
			st := before.Clone()
			return t.confirm(ctx, ConsentRequest{Member: spec.name, Arguments: pc.args.clone(), State: &st, CallID: id})
		})
		if err != nil {
			return zero, rec, err
		}
		if !ok {
			rec.Outcome = OutcomeRefused
			return withState(failure(msgRefused), nil)
		}
	}
	if spec.result == resultTabs {
		rec.Outcome = OutcomeOK
		return withState(body{OK: true}, nil)
	}

	rec.Attempted = true
	raw, err := driverCall(func() (any, error) { return spec.call(ctx, t.driver, pc.args.clone()) })
	if ctx.Err() != nil {
		return zero, rec, stopCause(ctx, err)
	}
	if err != nil {
		rec.Err = err
		var be *BrowserError
		if errors.As(err, &be) {
			rec.Outcome = OutcomeBrowserError
			msg := strings.ToValidUTF8(be.Message, "\uFFFD")
			if msg == "" {
				msg = msgEmptyBrowser
			}
			return withState(failure(msg), nil)
		}
		rec.Outcome = OutcomeFailed
		return withState(failure(msgGenericFailure), nil)
	}
	c, err := spec.check(raw)
	if err != nil {
		return zero, rec, err
	}
	var result json.RawMessage
	if c.image == nil { // an image is its own result
		if result, err = marshal(c.value); err != nil {
			return zero, rec, fmt.Errorf("%w: %w", ErrInvalidResult, err)
		}
	}
	rec.Outcome = OutcomeOK
	if c.notOK {
		rec.Outcome = OutcomeFileNotCompleted
	}
	return withState(body{OK: !c.notOK, Result: result}, c.image)
}

// ask runs a consent callback; a refusal is (false, nil), a failed
// callback or an ended context an error.
func (t *BrowserToolset) ask(ctx context.Context, f func() (any, error)) (bool, error) {
	ok, err := ask(f)
	if ctx.Err() != nil {
		return false, stopCause(ctx, err)
	}
	return ok, err
}

// readState reads, checks and reduces the driver's state; any failure stops
// the run.
func (t *BrowserToolset) readState(ctx context.Context) (State, error) {
	raw, err := driverCall(func() (any, error) { return t.driver.State(ctx) })
	if ctx.Err() != nil {
		return State{}, stopCause(ctx, err)
	}
	if err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrStateUnavailable, err)
	}
	return normalizeState(raw.(State))
}

// driverCall calls into the driver, turning a panic into an error so one
// bad driver method cannot take the caller's program down.
func driverCall(f func() (any, error)) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("the driver panicked: %v", p)
		}
	}()
	return f()
}

// stopCause is the error of a call interrupted by the end of ctx.
func stopCause(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ctx.Err()) {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %w", ctx.Err(), err)
}

func requestURL(a Arguments) *string {
	switch a := a.(type) {
	case NavigateArgs:
		return &a.URL
	case NewTabArgs:
		return a.URL
	}
	return nil
}

// body is the JSON text of a call's output.
type body struct {
	OK bool `json:"ok"`
	// Result is present on success ("null" for no result) and for a file
	// outcome that did not complete.
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	State  *State          `json:"state,omitempty"`
}

func failure(msg string) body { return body{Error: msg} }

// marshal encodes v without escaping <, > and & (the model reads it).
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (b body) text() string {
	out, err := marshal(b)
	if err != nil {
		// Every field was validated or built here; this cannot happen.
		panic(fmt.Sprintf("browser: encoding an output: %v", err))
	}
	return string(out)
}

func textOutput(callID string, b body) Output {
	return Output{CallID: callID, Text: b.text()}
}

// imageOutput answers with the status and state as text, then the image.
func imageOutput(callID string, b body, img *Image) Output {
	return Output{CallID: callID, Text: b.text(), Image: img}
}
