package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// DefaultMaxSteps bounds the requests of a run when RunOptions.MaxSteps is 0.
const DefaultMaxSteps = 20

// RunOptions describe one run.
type RunOptions struct {
	Model        string // required
	Instructions string
	Input        string // the task; required
	// MaxSteps bounds the API requests (DefaultMaxSteps when 0). The last
	// allowed request starts no effects: if it asks for actions, the run
	// ends with ErrStepLimit instead.
	MaxSteps int
	CallOptions
	// OnDiagnostic observes one record per completed request,
	// synchronously. Panics are ignored.
	OnDiagnostic func(Diagnostic)
}

// RunResult is what a successful run produced.
type RunResult struct {
	FinalMessage     string
	ResponseID       string // the last response
	Steps            int    // requests sent
	CompletedCallIDs []string
	Usage            Totals
	// Duration is the run's wall time (not a sum of step durations, which
	// may overlap).
	Duration time.Duration
}

// Run performs the native computer loop: it sends the task with the computer
// tool, executes the computer calls of each response, answers each with a
// screenshot and continues with previous_response_id until a response
// carries a final message and no computer call. On failure the error is a
// *RunError.
func (t *Toolset) Run(ctx context.Context, opts RunOptions) (*RunResult, error) {
	switch {
	case opts.Model == "":
		return nil, &RunError{Err: errors.New("RunOptions.Model is required")}
	case opts.Input == "":
		return nil, &RunError{Err: errors.New("RunOptions.Input is required")}
	case opts.MaxSteps < 0:
		return nil, &RunError{Err: fmt.Errorf("RunOptions.MaxSteps is %d; it must be at least 1 (0 means %d)", opts.MaxSteps, DefaultMaxSteps)}
	}
	if opts.MaxSteps == 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if err := t.acquire(); err != nil {
		return nil, &RunError{Err: err}
	}
	defer t.release()

	start := time.Now()
	x := &session{t: t, opts: opts.CallOptions, maxSteps: opts.MaxSteps}
	params := responses.ResponseNewParams{
		Model: opts.Model,
		Tools: []responses.ToolUnionParam{{OfComputer: &responses.ComputerToolParam{}}},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(opts.Input)},
	}
	// Instructions are not carried over by previous_response_id, so every
	// request repeats them (and the tool list).
	if opts.Instructions != "" {
		params.Instructions = openai.String(opts.Instructions)
	}
	var answered []string
	for step := 1; ; step++ {
		x.step = step
		if err := ctx.Err(); err != nil {
			return nil, x.fail(fmt.Errorf("cancelled before request %d: %w", step, err))
		}
		x.event(Event{Kind: EventRequest, CallIDs: answered})
		sent := time.Now()
		// The SDK may retry this HTTP request; that is safe because actions
		// only run between requests, never inside one.
		resp, err := t.responses.New(ctx, params, t.requestOptions...)
		took := time.Since(sent)
		if err != nil {
			// The request may have been billed without our seeing its usage.
			x.usage.Incomplete = true
			return nil, x.fail(fmt.Errorf("request %d of %d: %w", step, opts.MaxSteps, err))
		}
		x.responseID = resp.ID
		usage := usageOf(resp)
		x.usage.add(usage)
		calls := computerCalls(resp)
		callIDs := make([]string, len(calls))
		for i, c := range calls {
			callIDs[i] = c.CallID
		}
		diag := Diagnostic{API: "responses", Stage: "request", Reason: "completed", Usage: usage, Member: t.name, Duration: Duration(took)}
		if len(calls) > 0 {
			diag.CallID = calls[0].CallID
		}
		observe(opts.OnDiagnostic, diag)
		x.event(Event{Kind: EventResponse, CallIDs: callIDs, Usage: usage, Duration: Duration(took)})

		if resp.Status != responses.ResponseStatusCompleted {
			return nil, x.fail(fmt.Errorf("response %s has status %q%s; nothing of it was executed", resp.ID, resp.Status, incompleteReason(resp)))
		}
		if len(calls) == 0 {
			msg := finalMessage(resp)
			if msg == "" {
				return nil, x.fail(fmt.Errorf("response %s has neither a computer call nor a final message", resp.ID))
			}
			x.event(Event{Kind: EventFinal, Message: msg})
			return &RunResult{
				FinalMessage:     msg,
				ResponseID:       resp.ID,
				Steps:            step,
				CompletedCallIDs: x.completed,
				Usage:            x.usage,
				Duration:         time.Since(start),
			}, nil
		}
		if step >= opts.MaxSteps {
			return nil, x.fail(fmt.Errorf("%w: request %d of %d returned response %s asking for call %s; its actions were not executed",
				ErrStepLimit, step, opts.MaxSteps, resp.ID, strings.Join(callIDs, ", ")))
		}
		outputs, err := x.respond(ctx, calls)
		if err != nil {
			return nil, x.fail(err)
		}
		params.PreviousResponseID = openai.String(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
		answered = callIDs
	}
}

// respond validates every call of a response, then asks every approval, and
// only then runs the calls: nothing runs unless all of it may.
func (x *session) respond(ctx context.Context, calls []responses.ResponseComputerToolCall) (responses.ResponseInputParam, error) {
	plans := make([]plan, len(calls))
	for i, c := range calls {
		p, err := x.prepare(c)
		if err != nil {
			return nil, err
		}
		plans[i] = p
	}
	for _, p := range plans {
		if err := x.approveChecks(ctx, p); err != nil {
			return nil, err
		}
	}
	outputs := make(responses.ResponseInputParam, 0, len(plans))
	for _, p := range plans {
		out, err := x.runCall(ctx, p)
		if err != nil {
			return nil, err
		}
		outputs = append(outputs, responses.ResponseInputItemUnionParam{OfComputerCallOutput: &out})
	}
	return outputs, nil
}

func computerCalls(resp *responses.Response) []responses.ResponseComputerToolCall {
	var calls []responses.ResponseComputerToolCall
	for _, item := range resp.Output {
		if item.Type == "computer_call" {
			calls = append(calls, item.AsComputerCall())
		}
	}
	return calls
}

func usageOf(resp *responses.Response) *Usage {
	if !resp.JSON.Usage.Valid() {
		return nil
	}
	return &Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, TotalTokens: resp.Usage.TotalTokens}
}

// finalMessage joins the text (or refusal) of the response's messages.
func finalMessage(resp *responses.Response) string {
	var parts []string
	for _, item := range resp.Output {
		if item.Type != "message" {
			continue
		}
		var b strings.Builder
		for _, c := range item.Content {
			switch c.Type {
			case "output_text":
				b.WriteString(c.Text)
			case "refusal":
				b.WriteString(c.Refusal)
			}
		}
		if b.Len() > 0 {
			parts = append(parts, b.String())
		}
	}
	return strings.Join(parts, "\n\n")
}

func incompleteReason(resp *responses.Response) string {
	if r := resp.IncompleteDetails.Reason; r != "" {
		return " (" + r + ")"
	}
	if m := resp.Error.Message; m != "" {
		return " (" + m + ")"
	}
	return ""
}
