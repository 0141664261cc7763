package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/responses"
)

// ErrStopped is wrapped by the error of an iterated run the caller stopped
// at a turn: none of that turn's deferred calls ran.
var ErrStopped = errors.New("stopped by the caller")

// Iteration is a run stepped through turn by turn (Runner.Iterate,
// Toolset.Iterate). Range over Turns once; then Result says how the run
// ended. It is for one goroutine.
//
//	it := ts.Iterate(ctx, opts, calls)
//	for turn := range it.Turns() {
//		if !wanted(turn) {
//			break // nothing deferred of this turn runs, no request follows
//		}
//	}
//	res, err := it.Result()
//
// The run goes on inside the range statement, in the caller's goroutine:
// the iteration owns no goroutine, so leaving the loop in any way (break,
// return, panic, a cancelled context) ends the run and releases the
// toolset before the loop statement completes. Nothing is left to close.
type Iteration struct {
	run     func(context.Context, RunOptions) (*RunResult, error)
	ctx     context.Context
	opts    RunOptions
	started bool
	done    bool
	res     *RunResult
	err     error
}

// Turn is one completed response of an iterated run, as the caller sees
// it before the run goes on: before any of its deferred calls runs and
// before the next request. Everything in it is the caller's own copy.
type Turn struct {
	Step     int // the request that returned it, from 1
	MaxSteps int
	// ResponseID is the response's id; Response the response itself,
	// decoded afresh from the wire.
	ResponseID string
	Response   *responses.Response
	// Calls are the local calls it asks for, in the model's order.
	Calls []TurnCall
	// Messages are the text of its messages, in order (commentary
	// included); Final is the final message, set when it asks for no
	// local call.
	Messages []string
	Final    string
	// Usage is the response's usage (nil when it carried none).
	Usage *Usage
	// Ran are the calls already attempted while the response streamed
	// (eager execution): they cannot be undone. Deferred are the calls
	// that run only if the iteration goes on.
	Ran      []string
	Deferred []string
}

// TurnCall is a local call of a Turn.
type TurnCall struct {
	CallID string
	// Type is the output item's type ("computer_call", "function_call",
	// ...); Name the function's name, if it has one.
	Type string
	Name string
}

// Iterate prepares a run like Run with the same options, to be stepped
// through turn by turn: it starts when Turns is ranged over.
func (r *Runner) Iterate(ctx context.Context, opts RunOptions) *Iteration {
	return &Iteration{run: r.Run, ctx: ctx, opts: opts}
}

// Iterate is Runner.Iterate for the computer loop (see Toolset.Run).
func (t *Toolset) Iterate(ctx context.Context, opts RunOptions, calls CallOptions) *Iteration {
	run := func(ctx context.Context, opts RunOptions) (*RunResult, error) { return t.Run(ctx, opts, calls) }
	return &Iteration{run: run, ctx: ctx, opts: opts}
}

// Turns runs the run, yielding each completed turn (status completed, every
// item claimed and valid) before its deferred calls run and before the
// next request. Continuing the loop lets the run go on: the calls run,
// any text a person queued is added, the next request is sent. Leaving
// the loop stops the run there; Result then returns an error wrapping
// ErrStopped. The turn that ends the run (a final message) is yielded too.
// Only the first range runs: later ones yield nothing.
func (it *Iteration) Turns() iter.Seq[*Turn] {
	return func(yield func(*Turn) bool) {
		if it.started {
			return
		}
		it.started = true
		defer func() {
			if !it.done {
				// The loop body panicked through the run.
				it.err, it.done = &RunError{Err: fmt.Errorf("%w: the loop over the turns panicked", ErrStopped)}, true
			}
		}()
		opts := it.opts
		opts.pause = yield
		it.res, it.err = it.run(it.ctx, opts)
		it.done = true
	}
}

// Result is how the run ended: its result, or a *RunError as Run returns,
// which wraps ErrStopped when the caller left Turns early. It is an error
// before Turns has been ranged over to its end.
func (it *Iteration) Result() (*RunResult, error) {
	if !it.done {
		return nil, &RunError{Err: errors.New("the iteration has not run: range over Turns first")}
	}
	return it.res, it.err
}

// newTurn is what the caller is shown of a completed response: copies
// only, so nothing it changes reaches the run.
func newTurn(x *session, resp *responses.Response, calls []Call, final string, ran []string) *Turn {
	t := &Turn{Step: x.step, MaxSteps: x.maxSteps, ResponseID: resp.ID, Final: final, Ran: slices.Clone(ran)}
	var own responses.Response
	if err := own.UnmarshalJSON([]byte(resp.RawJSON())); err == nil {
		t.Response = &own
	}
	if u := usageOf(resp); u != nil {
		t.Usage = u
	}
	byID := map[string]responses.ResponseOutputItemUnion{}
	for _, item := range resp.Output {
		if item.Type == "message" {
			if text := messageText(item); text != "" {
				t.Messages = append(t.Messages, text)
			}
		}
		if item.CallID != "" {
			byID[item.CallID] = item
		}
		if item.Type == "mcp_approval_request" {
			byID[item.ID] = item
		}
	}
	for _, c := range calls {
		item := byID[c.CallID()]
		t.Calls = append(t.Calls, TurnCall{CallID: c.CallID(), Type: item.Type, Name: item.Name})
		if !slices.Contains(ran, c.CallID()) {
			t.Deferred = append(t.Deferred, c.CallID())
		}
	}
	return t
}

// stopped is the cause of a run the caller stopped at the response resp.
func stopped(x *session, resp *responses.Response, calls []Call) error {
	var deferred []string
	for _, c := range calls {
		if !slices.Contains(x.attempted, c.CallID()) {
			deferred = append(deferred, c.CallID())
		}
	}
	if len(deferred) == 0 {
		return fmt.Errorf("%w at request %d of %d (response %s)", ErrStopped, x.step, x.maxSteps, resp.ID)
	}
	return fmt.Errorf("%w at request %d of %d (response %s); its calls %s were not run",
		ErrStopped, x.step, x.maxSteps, resp.ID, strings.Join(deferred, ", "))
}
