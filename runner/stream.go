package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// DefaultMaxConcurrentCalls bounds the independent functions run at once
// when Streaming.MaxConcurrentCalls is 0.
const DefaultMaxConcurrentCalls = 2

// Streaming asks each response as a stream of Server-Sent Events. Without
// Eager, calls run only once the response is complete: a partial stream
// starts nothing.
type Streaming struct {
	// OnEvent observes every stream event, synchronously and in order.
	// Each call gets its own copy, decoded afresh from the wire, so an
	// observer that changes it changes nothing the runner uses. Panics
	// are ignored.
	OnEvent func(responses.ResponseStreamEventUnion)

	// Eager runs each completed local call (response.output_item.done)
	// while the rest of the response is still arriving, in the response's
	// order; never from partial arguments. Only enable it when a completed
	// call is safe to run before the whole response is validated: effects
	// cannot be undone. The rules (docs/design.md, "The tool runner"):
	//   - Items that complete out of order or after an index gap, and every
	//     item after them, wait for the complete response.
	//   - An item that a later event (or the final response) changes or
	//     removes after its call started stops the run; the call stays
	//     recorded as attempted or completed.
	//   - A stream that fails keeps the effects of the calls already run
	//     (events, checkpoints, the error's call ids).
	//   - Each call is approved, as without Eager, before it runs.
	//   - When server tools are declared, and on the last allowed request,
	//     local calls wait for the complete response.
	Eager bool
	// EarlyExecution restricts which calls Eager may start early (nil: every
	// local call may). A deferred call waits for the complete response,
	// and so does every call after it, to keep the order.
	EarlyExecution *EarlyExecution
	// BeforeEarlyCall, if set, is asked before a completed call starts
	// early; it gets its own copy and may answer EarlyDefer. It cannot
	// start early a call EarlyExecution defers. Anything but EarlyRun
	// (a panic too) defers.
	BeforeEarlyCall func(ctx context.Context, call EarlyCall) EarlyDecision
	// MaxConcurrentCalls bounds the early calls of independent functions
	// (see Independent) running at once (0: DefaultMaxConcurrentCalls).
	// The runner waits for a full group to finish before it reads more
	// of the stream. With a ledger, calls always run one at a time.
	MaxConcurrentCalls int
}

// EarlyExecution is the policy of Streaming.Eager: the function names
// whose calls may run early, and whether computer calls may. The zero
// value defers every call.
type EarlyExecution struct {
	Functions []string
	Computer  bool
}

// EarlyCall is what BeforeEarlyCall is shown of a completed call.
type EarlyCall struct {
	// Type is the item's type (computer_call, function_call, ...).
	Type string
	// Name is the function's name ("" for a computer call).
	Name   string
	CallID string
	// OutputIndex is the item's place in the response.
	OutputIndex int
}

// EarlyDecision is BeforeEarlyCall's answer.
type EarlyDecision string

// The answers of BeforeEarlyCall.
const (
	EarlyRun   EarlyDecision = "run"
	EarlyDefer EarlyDecision = "defer"
)

// errStreamEnded is a stream that stopped before its final event.
var errStreamEnded = errors.New("the stream ended before the response was complete")

// checkStreaming refuses streaming options that cannot work.
func checkStreaming(st *Streaming, declared map[string]bool) error {
	if st == nil {
		return nil
	}
	if !st.Eager && (st.EarlyExecution != nil || st.BeforeEarlyCall != nil || st.MaxConcurrentCalls != 0) {
		return errors.New("Streaming.EarlyExecution, BeforeEarlyCall and MaxConcurrentCalls need Streaming.Eager")
	}
	if st.MaxConcurrentCalls < 0 {
		return fmt.Errorf("Streaming.MaxConcurrentCalls is %d; it must be at least 1 (0 means %d)", st.MaxConcurrentCalls, DefaultMaxConcurrentCalls)
	}
	if p := st.EarlyExecution; p != nil {
		for _, name := range p.Functions {
			if !declared[name] {
				return fmt.Errorf("Streaming.EarlyExecution names %q, which no tool of the run declares", name)
			}
		}
	}
	return nil
}

// create sends one request: a plain one, or a stream read to its final
// event when opts.Stream is set. e, if set, runs completed calls while the
// stream goes on; create returns only after every call it started ended.
func (l *loop) create(ctx context.Context, opts *RunOptions, params responses.ResponseNewParams, requestOptions []option.RequestOption, e *eagerTurn) (resp *responses.Response, err error) {
	if opts.Stream == nil {
		return l.responses.New(ctx, params, requestOptions...)
	}
	if e != nil {
		defer func() {
			// Every call started ends before the turn does.
			if gerr := e.drain(); gerr != nil {
				resp, err = nil, errors.Join(err, gerr)
			}
		}()
	}
	stream := l.responses.NewStreaming(ctx, params, requestOptions...)
	defer stream.Close()
	for stream.Next() {
		ev := stream.Current()
		if opts.Stream.OnEvent != nil {
			var c responses.ResponseStreamEventUnion
			if err := c.UnmarshalJSON([]byte(ev.RawJSON())); err == nil {
				observe(opts.Stream.OnEvent, c)
			}
		}
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			resp := ev.Response
			return &resp, nil
		case "error":
			return nil, fmt.Errorf("stream error %s: %s", ev.Code, ev.Message)
		}
		if e != nil {
			if err := e.event(ctx, ev); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	return nil, errStreamEnded
}
