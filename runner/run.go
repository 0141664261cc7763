package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/internal/onerun"
)

// DefaultMaxSteps bounds the requests of a run when RunOptions.MaxSteps is 0.
const DefaultMaxSteps = 20

// RunOptions describe one run.
type RunOptions struct {
	Model        string // required
	Instructions string
	// Input is the task as text. A run starts from Input, InputItems,
	// PreviousResponseID or a mix of them; at least one is required. Text
	// comes after the items.
	Input string
	// InputItems start the run from items (for example a screenshot the
	// caller took through the driver: give the computer toolset its size
	// in CallOptions.ImageSpace so the model's first call may click on it).
	InputItems responses.ResponseInputParam
	// PreviousResponseID continues an earlier response. Its outstanding
	// calls must be answered in InputItems.
	PreviousResponseID string
	// MaxSteps bounds the API requests (DefaultMaxSteps when 0). The last
	// allowed request starts no effects: if it asks for local calls, the
	// run ends with ErrStepLimit instead.
	MaxSteps int
	// OnEvent observes the whole run, every tool's calls included,
	// synchronously. It should return quickly.
	OnEvent func(Event)
	// Tools are the run's tools (function tools, server tools, MCP
	// servers, a browser or code tool), declared on every request in this
	// order; Toolset.Run declares the computer first.
	Tools []Tool
	// OnDiagnostic observes one record per request, synchronously. Panics
	// are ignored.
	OnDiagnostic func(Diagnostic)

	// ToolChoice is sent unchanged on every request. A choice that always
	// forces a local tool is refused before anything runs: the run could
	// never end.
	ToolChoice responses.ResponseNewParamsToolChoiceUnion
	// Store is sent unchanged; the runner never turns it on. When it is
	// false, nothing is stored, so every request re-sends the whole
	// conversation (the responses' items in their native form, encrypted
	// content as it is) instead of previous_response_id. It cannot be
	// false when image generation is declared.
	Store param.Opt[bool]
	// ContextManagement (the API's own compaction) is sent unchanged on
	// every request; compaction items are kept as they are.
	ContextManagement []responses.ResponseNewParamsContextManagement
	// ContextBudget, if set, bounds each request's input in a run that
	// keeps its own history (see ContextBudget).
	ContextBudget *ContextBudget
	// ApproveMCP answers each mcp_approval_request of a declared MCP
	// server. It gets its own copy of the request and must return exactly
	// true or false; anything else, or no callback, stops the run. A
	// final message never counts as consent.
	ApproveMCP func(ctx context.Context, req MCPApprovalRequest) (any, error)
	// Control, if set, takes a person's text and supplied outputs while the
	// run goes.
	Control *RunControl
	// Ledger, if set, receives the run's checkpoints (see Ledger).
	Ledger Ledger
	// Reconcile answers, on Resume, whether the call a checkpoint left
	// uncertain was performed (see Uncertain); without it such a
	// checkpoint does not resume.
	Reconcile func(context.Context, Uncertain) (Reconciliation, error)
	// Stream, if set, reads each response as a stream (see Streaming).
	Stream *Streaming

	// resume is the state a resumed run starts from.
	resume *session
	// pause, set by Iterate, is shown each completed turn before its
	// deferred calls run; false stops the run there.
	pause func(*Turn) bool
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

// Runner runs the Responses loop with tools and no computer; Toolset.Run
// is the same loop with the computer toolset as its first tool. One run at
// a time: a concurrent one fails with ErrBusy.
type Runner struct {
	responses      responses.ResponseService
	requestOptions []option.RequestOption
	name           string

	gate onerun.Gate
}

// NewRunner returns a Runner asking client's Responses API, adding
// requestOptions to every request. Diagnostics name it "responses".
func NewRunner(client openai.Client, requestOptions ...option.RequestOption) *Runner {
	return &Runner{responses: client.Responses, requestOptions: requestOptions, name: "responses"}
}

// Run performs the loop with opts.Tools. On failure the error is a
// *RunError.
func (r *Runner) Run(ctx context.Context, opts RunOptions) (*RunResult, error) {
	// A Runner is never closed: the gate only refuses a second run.
	if err := r.gate.Acquire(ErrClosed, ErrBusy); err != nil {
		return nil, &RunError{Err: err}
	}
	defer r.gate.Release()
	l := loop{responses: r.responses, requestOptions: r.requestOptions, name: r.name, tools: opts.Tools}
	return l.run(ctx, opts)
}

// Run performs the native computer loop, with opts.Tools beside the
// computer, whose calls calls govern: it sends the task, executes the local
// calls of each response in order, answers each and continues with
// previous_response_id until a response carries a final message and no
// local call. On failure the error is a *RunError.
func (t *Toolset) Run(ctx context.Context, opts RunOptions, calls CallOptions) (*RunResult, error) {
	if err := t.acquire(); err != nil {
		return nil, &RunError{Err: err}
	}
	defer t.release()
	c := t.tool(calls)
	defer c.keepImage()
	l := loop{responses: t.responses, requestOptions: t.requestOptions, name: t.name,
		tools: append([]Tool{c}, opts.Tools...)}
	return l.run(ctx, opts)
}

// loop is one run's Responses loop over its tools.
type loop struct {
	responses      responses.ResponseService
	requestOptions []option.RequestOption
	name           string
	tools          []Tool
}

// check refuses options that cannot make a run, before anything runs.
func (l *loop) check(opts *RunOptions) error {
	switch {
	case opts.Model == "":
		return errors.New("RunOptions.Model is required")
	case opts.Input == "" && len(opts.InputItems) == 0 && opts.PreviousResponseID == "":
		return errors.New("RunOptions.Input, InputItems or PreviousResponseID is required")
	case opts.MaxSteps < 0:
		return fmt.Errorf("RunOptions.MaxSteps is %d; it must be at least 1 (0 means %d)", opts.MaxSteps, DefaultMaxSteps)
	}
	if opts.MaxSteps == 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	var params []responses.ToolUnionParam
	for _, t := range l.tools {
		params = append(params, t.Params()...)
	}
	if err := checkRun(params, opts); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, t := range l.tools {
		for _, p := range t.Params() {
			name := toolName(p)
			if name == "" {
				continue
			}
			if names[name] {
				return fmt.Errorf("two tools of the run are named %q", name)
			}
			names[name] = true
		}
	}
	return checkStreaming(opts.Stream, names)
}

// toolName is the name the model calls a tool by ("" for tools called by
// type).
func toolName(p responses.ToolUnionParam) string {
	switch {
	case p.OfFunction != nil:
		return p.OfFunction.Name
	case p.OfCustom != nil:
		return p.OfCustom.Name
	}
	return ""
}

func (l *loop) run(ctx context.Context, opts RunOptions) (*RunResult, error) {
	if err := l.check(&opts); err != nil {
		return nil, &RunError{Err: err}
	}
	start := time.Now()
	x := &session{maxSteps: opts.MaxSteps, onEvent: opts.OnEvent, approveMCP: opts.ApproveMCP, ctl: opts.Control}
	if x.ctl == nil {
		// A person's take over adds its text through one (takeover.go).
		x.ctl = &RunControl{}
	}
	first := 1
	var b *batch // the response a resumed run stopped in
	if r := opts.resume; r != nil {
		x.attempted, x.completed, x.usage = r.attempted, r.completed, r.usage
		first, b = r.step+1, r.batch
		x.responseID = r.responseID
	}
	defer x.ctl.begin(nil)
	params := responses.ResponseNewParams{Model: opts.Model, Input: firstInput(opts),
		ToolChoice: opts.ToolChoice, Store: opts.Store, ContextManagement: opts.ContextManagement}
	requestOptions := l.requestOptions
	for _, t := range l.tools {
		for _, p := range t.Params() {
			params.Tools = append(params.Tools, p)
			if p.OfMcp != nil && len(requestOptions) == len(l.requestOptions) {
				// A retried request could make an MCP server act twice.
				requestOptions = append(slices.Clip(requestOptions), option.WithMaxRetries(0))
			}
		}
	}
	// Without storage every request carries the whole conversation.
	stateless := opts.Store.Valid() && !opts.Store.Value
	var history responses.ResponseInputParam
	if stateless {
		history = firstInput(opts).OfInputItemList
		if history == nil {
			history = responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(opts.Input, responses.EasyInputMessageRoleUser)}
		}
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: history}
	}
	// Instructions are not carried over by previous_response_id, so every
	// request repeats them (and the tool list).
	if opts.Instructions != "" {
		params.Instructions = openai.String(opts.Instructions)
	}
	if opts.PreviousResponseID != "" {
		params.PreviousResponseID = openai.String(opts.PreviousResponseID)
	}
	var answered []string
	for step := first; ; step++ {
		x.step = step
		if err := ctx.Err(); err != nil {
			return nil, x.fail(fmt.Errorf("cancelled before request %d: %w", step, err))
		}
		var resp *responses.Response
		var took time.Duration
		var usage *Usage
		attemptedBefore := len(x.attempted)
		s := &Step{x: x}
		var pre responses.ResponseInputParam // outputs from before a resume
		save := func(raw []byte, phase, callID string, outputs responses.ResponseInputParam) error {
			if opts.Ledger == nil {
				// Nothing keeps it: marshalling the outputs (a screenshot's
				// base64 each) would be a copy per call for nothing.
				return nil
			}
			cp := Checkpoint{Phase: phase, CallID: callID, Response: json.RawMessage(raw)}
			for _, o := range append(slices.Clip(pre), outputs...) {
				raw, err := json.Marshal(o)
				if err != nil {
					return fmt.Errorf("checkpoint: %w", err)
				}
				cp.Outputs = append(cp.Outputs, raw)
			}
			return l.checkpoint(x, opts.Ledger, cp, &params)
		}
		var e *eagerTurn
		if b != nil {
			// Resumed inside this response: it is not asked for again.
			resp = b.resp
		} else {
			if err := l.checkpoint(x, opts.Ledger, Checkpoint{Phase: PhaseRequest}, &params); err != nil {
				return nil, x.fail(err)
			}
			req, err := opts.ContextBudget.request(params)
			if err != nil {
				return nil, x.fail(fmt.Errorf("request %d of %d: %w", step, opts.MaxSteps, err))
			}
			// A request belongs to the response it continues from, even
			// the first one of a run that continues an earlier response.
			continues := x.responseID
			if continues == "" && params.PreviousResponseID.Valid() {
				continues = params.PreviousResponseID.Value
			}
			x.event(Event{Kind: EventRequest, CallIDs: answered, ResponseID: continues})
			e = l.newEagerTurn(s, &opts, step >= opts.MaxSteps, save)
			sent := time.Now()
			// The SDK may retry this HTTP request; that is safe because local
			// calls only start once a response arrives (eager ones once the
			// stream is read), never inside a retried request.
			r, err := l.create(ctx, &opts, req, requestOptions, e)
			took = time.Since(sent)
			if err != nil {
				// The request may have been billed without our seeing its usage.
				x.usage.Incomplete = true
				observe(opts.OnDiagnostic, Diagnostic{API: "responses", Stage: "request", Reason: "error", Member: l.name, Duration: Duration(took)})
				return nil, x.fail(fmt.Errorf("request %d of %d: %w", step, opts.MaxSteps, err))
			}
			resp, usage = r, usageOf(r)
			x.usage.add(usage)
		}
		x.responseID = resp.ID
		// Calls run early (Streaming.Eager) are checked against the
		// complete response; the rest of it is claimed now.
		var (
			earlyCalls []Call
			done       responses.ResponseInputParam
			from       int
			early      []string
			settleErr  error
		)
		if e != nil {
			earlyCalls, done, from, early, settleErr = e.settle(resp)
		}
		calls, msgs, claimErr := l.claim(s, resp, from)
		final := strings.Join(append(early, msgs...), "\n\n")
		if settleErr != nil {
			calls, claimErr = nil, settleErr
		}
		// From here the caller may supply outputs for these calls (for
		// example from the response event).
		x.ctl.begin(calls)
		callIDs := make([]string, 0, len(earlyCalls)+len(calls))
		for _, c := range append(slices.Clip(earlyCalls), calls...) {
			callIDs = append(callIDs, c.CallID())
		}
		diag := Diagnostic{API: "responses", Stage: "request", Reason: string(resp.Status), Usage: usage,
			CallIDs: callIDs, Member: l.name, Duration: Duration(took)}
		if len(callIDs) > 0 {
			diag.CallID = callIDs[0]
		}
		observe(opts.OnDiagnostic, diag)
		x.event(Event{Kind: EventResponse, CallIDs: callIDs, Usage: usage, Duration: Duration(took)})

		if resp.Status != responses.ResponseStatusCompleted {
			what := "nothing of it was executed"
			if len(earlyCalls) > 0 {
				what = "nothing more of it was executed (calls run early stay recorded)"
			}
			return nil, x.fail(fmt.Errorf("response %s has status %q%s; %s", resp.ID, resp.Status, incompleteReason(resp), what))
		}
		if claimErr != nil {
			return nil, x.fail(claimErr)
		}
		if opts.pause != nil && !opts.pause(newTurn(x, resp, append(slices.Clip(earlyCalls), calls...), final, x.attempted[attemptedBefore:])) {
			if len(earlyCalls) > 0 {
				// The ledger gets the complete response with the calls run
				// early completed, as going on would have written: Resume
				// continues inside it.
				if err := save([]byte(resp.RawJSON()), PhaseAfterCall, earlyCalls[len(earlyCalls)-1].CallID(), done); err != nil {
					return nil, x.fail(err)
				}
			}
			return nil, x.fail(stopped(x, resp, calls))
		}
		// What tells the model of a take over made while it wrote its
		// final message: the run goes on instead of ending on it.
		var handback responses.ResponseInputParam
		if len(earlyCalls) == 0 && len(calls) == 0 && !x.ctl.pending() {
			if final == "" {
				return nil, x.fail(fmt.Errorf("response %s has neither a local call nor a final message", resp.ID))
			}
			var err error
			if handback, err = handedBack(ctx, s, l.tools); err != nil {
				return nil, x.fail(err)
			}
		}
		if len(earlyCalls) == 0 && len(calls) == 0 && !x.ctl.pending() && len(handback) == 0 {
			x.event(Event{Kind: EventFinal, Message: final})
			return &RunResult{
				FinalMessage:     final,
				ResponseID:       resp.ID,
				Steps:            step,
				CompletedCallIDs: x.completed,
				Usage:            x.usage,
				Duration:         time.Since(start),
			}, nil
		}
		if step >= opts.MaxSteps {
			// A person's text needs one more request, as calls do; it is
			// dropped from the queue, not left for another run.
			unsent := ""
			if n := len(x.ctl.end()); n > 0 {
				unsent = fmt.Sprintf("; %d text(s) queued by append_user_text were not sent", n)
			}
			if len(calls) == 0 {
				unseen := "the person's text"
				if len(handback) > 0 {
					unseen = "the person's take over (recorded)"
				}
				return nil, x.fail(fmt.Errorf("%w: request %d of %d returned response %s, whose final message did not see %s%s",
					ErrStepLimit, step, opts.MaxSteps, resp.ID, unseen, unsent))
			}
			return nil, x.fail(fmt.Errorf("%w: request %d of %d returned response %s asking for call %s; nothing of it was executed%s",
				ErrStepLimit, step, opts.MaxSteps, resp.ID, strings.Join(callIDs, ", "), unsent))
		}
		raw := []byte(resp.RawJSON())
		saveResp := func(phase, callID string, outputs responses.ResponseInputParam) error {
			return save(raw, phase, callID, outputs)
		}
		var err error
		switch {
		case b != nil:
			pre, calls, err = b.reenter(ctx, s, calls, saveResp)
			b = nil
		case len(earlyCalls) > 0:
			// The complete response, with the calls run early completed.
			err = saveResp(PhaseAfterCall, earlyCalls[len(earlyCalls)-1].CallID(), done)
		default:
			err = saveResp(PhaseResponse, "", nil)
		}
		if err != nil {
			x.ctl.end()
			return nil, x.fail(err)
		}
		outputs, err := respond(ctx, s, calls, done, saveResp)
		outputs = append(pre, outputs...)
		texts := x.ctl.end()
		if err != nil {
			return nil, x.fail(err)
		}
		// A person's take over and text come after the outputs of the
		// completed turn.
		outputs = append(outputs, handback...)
		for _, text := range texts {
			outputs = append(outputs, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
		}
		if stateless {
			for _, item := range resp.Output {
				history = append(history, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
			}
			history = append(history, outputs...)
			outputs = history
		} else {
			params.PreviousResponseID = openai.String(resp.ID)
		}
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
		answered = callIDs
	}
}

// firstInput is the first request's input: the items, then the text.
func firstInput(opts RunOptions) responses.ResponseNewParamsInputUnion {
	if len(opts.InputItems) == 0 {
		return responses.ResponseNewParamsInputUnion{OfString: openai.String(opts.Input)}
	}
	items := append(responses.ResponseInputParam(nil), opts.InputItems...)
	if opts.Input != "" {
		items = append(items, responses.ResponseInputItemParamOfMessage(opts.Input, responses.EasyInputMessageRoleUser))
	}
	return responses.ResponseNewParamsInputUnion{OfInputItemList: items}
}

// claim hands every output item to the one tool that claims it and
// prepares the calls, in the response's order. Messages are not claimed:
// those not in the commentary phase make the final message. Reasoning and
// compaction items stay in the response chain. Anything else is an error
// naming the item's type: dropping it would hide what the model asked for,
// and an unanswered call makes the next request fail.
func (l *loop) claim(s *Step, resp *responses.Response, from int) ([]Call, []string, error) {
	var calls []Call
	var final []string
	for i := from; i < len(resp.Output); i++ {
		c, text, err := l.claimOne(s, i, resp.Output[i])
		if err != nil {
			return calls, nil, err
		}
		if text != "" {
			final = append(final, text)
		}
		if c != nil {
			calls = append(calls, c)
		}
	}
	return calls, final, nil
}

// claimOne claims the output item at index i: its prepared call (nil if
// it needs no answer), or its text if it is part of the final message.
func (l *loop) claimOne(s *Step, i int, item responses.ResponseOutputItemUnion) (Call, string, error) {
	switch item.Type {
	case "message":
		if item.Phase != responses.ResponseOutputMessagePhaseCommentary {
			return nil, messageText(item), nil
		}
		return nil, "", nil
	case "reasoning", "compaction":
		return nil, "", nil
	}
	var owner Tool
	for _, t := range l.tools {
		if t.Claims(item) {
			if owner != nil {
				return nil, "", fmt.Errorf("response %s: output item %d (%s) is claimed by two tools", s.ResponseID(), i, item.Type)
			}
			owner = t
		}
	}
	if owner == nil {
		return nil, "", fmt.Errorf("response %s: output item %d has type %q, which no tool of the run handles%s",
			s.ResponseID(), i, item.Type, callName(item))
	}
	c, err := owner.Prepare(s, item)
	return c, "", err
}

// callName names what an unclaimed call asked for.
func callName(item responses.ResponseOutputItemUnion) string {
	if item.Name == "" {
		return ""
	}
	return fmt.Sprintf(" (it calls %q)", item.Name)
}

// respond asks every approval of a response's calls, and only then runs
// them in order: nothing runs unless all of it may. done are the outputs
// of the response's calls that already ran (early, while it streamed).
// save writes the checkpoints before and after each call.
func respond(ctx context.Context, s *Step, calls []Call, done responses.ResponseInputParam, save func(phase, callID string, outputs responses.ResponseInputParam) error) (responses.ResponseInputParam, error) {
	for _, c := range calls {
		if err := c.Approve(ctx, s); err != nil {
			return nil, err
		}
	}
	outputs := make(responses.ResponseInputParam, 0, len(done)+len(calls))
	outputs = append(outputs, done...)
	for _, c := range calls {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cancelled before call %s: %w", c.CallID(), err)
		}
		if err := save(PhaseBeforeCall, c.CallID(), outputs); err != nil {
			return nil, err
		}
		out, err := c.Execute(ctx, s)
		if err != nil {
			return nil, err
		}
		outputs = append(outputs, out)
		if err := save(PhaseAfterCall, c.CallID(), outputs); err != nil {
			return nil, err
		}
	}
	return outputs, nil
}

func usageOf(resp *responses.Response) *Usage {
	if !resp.JSON.Usage.Valid() {
		return nil
	}
	return &Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, TotalTokens: resp.Usage.TotalTokens}
}

// messageText joins the text (or refusal) of a message.
func messageText(item responses.ResponseOutputItemUnion) string {
	var b strings.Builder
	for _, c := range item.Content {
		switch c.Type {
		case "output_text":
			b.WriteString(c.Text)
		case "refusal":
			b.WriteString(c.Refusal)
		}
	}
	return b.String()
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
