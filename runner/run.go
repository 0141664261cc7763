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
	if err := t.gate.Acquire(ErrClosed, ErrBusy); err != nil {
		return nil, &RunError{Err: err}
	}
	defer t.gate.Release()
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
	r := l.begin(&opts)
	defer r.x.ctl.begin(nil)
	for step := r.first; ; step++ {
		r.x.step = step
		if err := ctx.Err(); err != nil {
			return nil, r.x.fail(fmt.Errorf("cancelled before request %d: %w", step, err))
		}
		t, err := r.receive(ctx, step)
		if err != nil {
			return nil, r.x.fail(err)
		}
		if err := r.claim(t); err != nil {
			return nil, r.x.fail(err)
		}
		if err := r.pause(t); err != nil {
			return nil, r.x.fail(err)
		}
		handback, err := r.handBack(ctx, t)
		if err != nil {
			return nil, r.x.fail(err)
		}
		if t.ends(handback) {
			r.x.event(Event{Kind: EventFinal, Message: t.final})
			return &RunResult{
				FinalMessage:     t.final,
				ResponseID:       t.resp.ID,
				Steps:            step,
				CompletedCallIDs: r.x.completed,
				Usage:            r.x.usage,
				Duration:         time.Since(r.start),
			}, nil
		}
		if err := r.stepLimit(t, handback); err != nil {
			return nil, r.x.fail(err)
		}
		outputs, err := r.execute(ctx, t, handback)
		if err != nil {
			return nil, r.x.fail(err)
		}
		r.next(t, outputs)
	}
}

// run is one run of the loop in progress: what lasts from request to
// request. Its stages, in the order each turn goes through them: receive
// (a request, or the response a resumed run stopped in), claim, pause,
// handBack, the final message or stepLimit, execute, next.
type run struct {
	l              *loop
	opts           *RunOptions
	x              *session
	start          time.Time
	params         responses.ResponseNewParams
	requestOptions []option.RequestOption
	// first is the first step: 1, or the one after a resume's checkpoint.
	first int
	// resumed is the response a resumed run stopped in, until it is
	// re-entered.
	resumed *batch
	// Without storage every request carries the whole conversation:
	// history.
	stateless bool
	history   responses.ResponseInputParam
	// answered are the calls the next request answers.
	answered []string
}

// turn is one response of a run, from its request to its outputs.
type turn struct {
	r     *run
	step  int
	s     *Step
	resp  *responses.Response
	took  time.Duration
	usage *Usage
	// attemptedBefore is how many calls were attempted before it.
	attemptedBefore int
	eager           *eagerTurn
	// early are its calls run while it streamed (Streaming.Eager), done
	// their outputs; calls are the rest, still to run.
	early []Call
	done  responses.ResponseInputParam
	calls []Call
	// callIDs are every call's, early ones first.
	callIDs []string
	final   string
	// pre are the outputs of its calls that completed before a resume.
	pre responses.ResponseInputParam
}

// begin sets up a run: its session (a resumed one's state), the request
// parameters every request shares, the first request's input.
func (l *loop) begin(opts *RunOptions) *run {
	x := &session{maxSteps: opts.MaxSteps, onEvent: opts.OnEvent, approveMCP: opts.ApproveMCP, ctl: opts.Control}
	if x.ctl == nil {
		// A person's take over adds its text through one (takeover.go).
		x.ctl = &RunControl{}
	}
	r := &run{l: l, opts: opts, x: x, start: time.Now(), first: 1, requestOptions: l.requestOptions}
	if p := opts.resume; p != nil {
		x.attempted, x.completed, x.usage = p.attempted, p.completed, p.usage
		r.first, r.resumed = p.step+1, p.batch
		x.responseID = p.responseID
	}
	r.params = responses.ResponseNewParams{Model: opts.Model, Input: firstInput(*opts),
		ToolChoice: opts.ToolChoice, Store: opts.Store, ContextManagement: opts.ContextManagement}
	for _, t := range l.tools {
		for _, p := range t.Params() {
			r.params.Tools = append(r.params.Tools, p)
			if p.OfMcp != nil && len(r.requestOptions) == len(l.requestOptions) {
				// A retried request could make an MCP server act twice.
				r.requestOptions = append(slices.Clip(r.requestOptions), option.WithMaxRetries(0))
			}
		}
	}
	r.stateless = opts.Store.Valid() && !opts.Store.Value
	if r.stateless {
		r.history = firstInput(*opts).OfInputItemList
		if r.history == nil {
			r.history = responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(opts.Input, responses.EasyInputMessageRoleUser)}
		}
		r.params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: r.history}
	}
	// Instructions are not carried over by previous_response_id, so every
	// request repeats them (and the tool list).
	if opts.Instructions != "" {
		r.params.Instructions = openai.String(opts.Instructions)
	}
	if opts.PreviousResponseID != "" {
		r.params.PreviousResponseID = openai.String(opts.PreviousResponseID)
	}
	return r
}

// receive is a turn's response: the next request's, or the one a resumed
// run stopped in, which is not asked for again.
func (r *run) receive(ctx context.Context, step int) (*turn, error) {
	x, opts := r.x, r.opts
	t := &turn{r: r, step: step, s: &Step{x: x}, attemptedBefore: len(x.attempted)}
	if r.resumed != nil {
		t.resp = r.resumed.resp
		x.responseID = t.resp.ID
		return t, nil
	}
	if err := r.l.checkpoint(x, opts.Ledger, Checkpoint{Phase: PhaseRequest}, &r.params); err != nil {
		return nil, err
	}
	req, err := opts.ContextBudget.request(r.params)
	if err != nil {
		return nil, fmt.Errorf("request %d of %d: %w", step, opts.MaxSteps, err)
	}
	// A request belongs to the response it continues from, even the first
	// one of a run that continues an earlier response.
	continues := x.responseID
	if continues == "" && r.params.PreviousResponseID.Valid() {
		continues = r.params.PreviousResponseID.Value
	}
	x.event(Event{Kind: EventRequest, CallIDs: r.answered, ResponseID: continues})
	t.eager = r.l.newEagerTurn(t.s, opts, step >= opts.MaxSteps, t.save)
	sent := time.Now()
	// The SDK may retry this HTTP request; that is safe because local calls
	// only start once a response arrives (eager ones once the stream is
	// read), never inside a retried request.
	resp, err := r.l.create(ctx, opts, req, r.requestOptions, t.eager)
	t.took = time.Since(sent)
	if err != nil {
		// The request may have been billed without our seeing its usage.
		x.usage.Incomplete = true
		observe(opts.OnDiagnostic, Diagnostic{API: "responses", Stage: "request", Reason: "error", Member: r.l.name, Duration: Duration(t.took)})
		return nil, fmt.Errorf("request %d of %d: %w", step, opts.MaxSteps, err)
	}
	t.resp, t.usage = resp, usageOf(resp)
	x.usage.add(t.usage)
	x.responseID = resp.ID
	return t, nil
}

// claim hands the turn's items to its tools and reports the response: calls
// run early (Streaming.Eager) are checked against the complete response
// and the rest of it is claimed. A response that did not complete, or
// whose items are not all claimed and valid, stops the run.
func (r *run) claim(t *turn) error {
	x, resp := r.x, t.resp
	var (
		from      int
		early     []string
		settleErr error
	)
	if t.eager != nil {
		t.early, t.done, from, early, settleErr = t.eager.settle(resp)
	}
	calls, msgs, claimErr := r.l.claim(t.s, resp, from)
	t.calls, t.final = calls, strings.Join(append(early, msgs...), "\n\n")
	if settleErr != nil {
		t.calls, claimErr = nil, settleErr
	}
	// From here the caller may supply outputs for these calls (for example
	// from the response event).
	x.ctl.begin(t.calls)
	t.callIDs = make([]string, 0, len(t.early)+len(t.calls))
	for _, c := range t.all() {
		t.callIDs = append(t.callIDs, c.CallID())
	}
	diag := Diagnostic{API: "responses", Stage: "request", Reason: string(resp.Status), Usage: t.usage,
		CallIDs: t.callIDs, Member: r.l.name, Duration: Duration(t.took)}
	if len(t.callIDs) > 0 {
		diag.CallID = t.callIDs[0]
	}
	observe(r.opts.OnDiagnostic, diag)
	x.event(Event{Kind: EventResponse, CallIDs: t.callIDs, Usage: t.usage, Duration: Duration(t.took)})

	if resp.Status != responses.ResponseStatusCompleted {
		what := "nothing of it was executed"
		if len(t.early) > 0 {
			what = "nothing more of it was executed (calls run early stay recorded)"
		}
		return fmt.Errorf("response %s has status %q%s; %s", resp.ID, resp.Status, incompleteReason(resp), what)
	}
	return claimErr
}

// pause shows an iterated run's caller the completed turn (Iterate); an
// error stops the run there, none of its deferred calls run.
func (r *run) pause(t *turn) error {
	if r.opts.pause == nil || r.opts.pause(newTurn(r.x, t.resp, t.all(), t.final, r.x.attempted[t.attemptedBefore:])) {
		return nil
	}
	if len(t.early) > 0 {
		// The ledger gets the complete response with the calls run early
		// completed, as going on would have written: Resume continues
		// inside it.
		if err := t.saveResponse(PhaseAfterCall, t.early[len(t.early)-1].CallID(), t.done); err != nil {
			return err
		}
	}
	return stopped(r.x, t.resp, t.calls)
}

// handBack is what tells the model of a take over made while it wrote its
// final message, so that the run goes on instead of ending on it. A turn
// with no call needs a final message.
func (r *run) handBack(ctx context.Context, t *turn) (responses.ResponseInputParam, error) {
	if len(t.early) > 0 || len(t.calls) > 0 || r.x.ctl.pending() {
		return nil, nil
	}
	if t.final == "" {
		return nil, fmt.Errorf("response %s has neither a local call nor a final message", t.resp.ID)
	}
	return handedBack(ctx, t.s, r.l.tools)
}

// ends reports whether the turn ends the run with its final message:
// nothing to run, answer or send.
func (t *turn) ends(handback responses.ResponseInputParam) bool {
	return len(t.early) == 0 && len(t.calls) == 0 && !t.r.x.ctl.pending() && len(handback) == 0
}

// stepLimit stops a run whose last allowed request asked for more: its
// calls, a person's text or a take over would need another request. The
// text is dropped from the queue, not left for another run.
func (r *run) stepLimit(t *turn, handback responses.ResponseInputParam) error {
	step, opts := t.step, r.opts
	if step < opts.MaxSteps {
		return nil
	}
	unsent := ""
	if n := len(r.x.ctl.end()); n > 0 {
		unsent = fmt.Sprintf("; %d text(s) queued by append_user_text were not sent", n)
	}
	if len(t.calls) == 0 {
		unseen := "the person's text"
		if len(handback) > 0 {
			unseen = "the person's take over (recorded)"
		}
		return fmt.Errorf("%w: request %d of %d returned response %s, whose final message did not see %s%s",
			ErrStepLimit, step, opts.MaxSteps, t.resp.ID, unseen, unsent)
	}
	return fmt.Errorf("%w: request %d of %d returned response %s asking for call %s; nothing of it was executed%s",
		ErrStepLimit, step, opts.MaxSteps, t.resp.ID, strings.Join(t.callIDs, ", "), unsent)
}

// execute checkpoints the response and runs its calls (respond): a
// resumed run re-enters the response it stopped in. The outputs are the
// turn's, from before a resume too, then a take over's (handback) and any
// text a person queued.
func (r *run) execute(ctx context.Context, t *turn, handback responses.ResponseInputParam) (responses.ResponseInputParam, error) {
	var err error
	switch {
	case r.resumed != nil:
		t.pre, t.calls, err = r.resumed.reenter(ctx, t.s, t.calls, t.saveResponse)
		r.resumed = nil
	case len(t.early) > 0:
		// The complete response, with the calls run early completed.
		err = t.saveResponse(PhaseAfterCall, t.early[len(t.early)-1].CallID(), t.done)
	default:
		err = t.saveResponse(PhaseResponse, "", nil)
	}
	if err != nil {
		r.x.ctl.end()
		return nil, err
	}
	outputs, err := respond(ctx, t.s, t.calls, t.done, t.saveResponse)
	outputs = append(t.pre, outputs...)
	texts := r.x.ctl.end()
	if err != nil {
		return nil, err
	}
	// A person's take over and text come after the outputs of the
	// completed turn.
	outputs = append(outputs, handback...)
	for _, text := range texts {
		outputs = append(outputs, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
	}
	return outputs, nil
}

// next makes the next request's input: the outputs after the response, as
// the whole history when nothing is stored.
func (r *run) next(t *turn, outputs responses.ResponseInputParam) {
	if r.stateless {
		for _, item := range t.resp.Output {
			r.history = append(r.history, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
		}
		r.history = append(r.history, outputs...)
		outputs = r.history
	} else {
		r.params.PreviousResponseID = openai.String(t.resp.ID)
	}
	r.params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
	r.answered = t.callIDs
}

// all are the turn's calls, early ones first.
func (t *turn) all() []Call { return append(slices.Clip(t.early), t.calls...) }

// save checkpoints the turn (raw is its response) with the outputs so
// far, those from before a resume first.
func (t *turn) save(raw []byte, phase, callID string, outputs responses.ResponseInputParam) error {
	r := t.r
	if r.opts.Ledger == nil {
		// Nothing keeps it: marshalling the outputs (a screenshot's base64
		// each) would be a copy per call for nothing.
		return nil
	}
	cp := Checkpoint{Phase: phase, CallID: callID, Response: json.RawMessage(raw)}
	for _, o := range append(slices.Clip(t.pre), outputs...) {
		raw, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		cp.Outputs = append(cp.Outputs, raw)
	}
	return r.l.checkpoint(r.x, r.opts.Ledger, cp, &r.params)
}

// saveResponse is save with the turn's complete response.
func (t *turn) saveResponse(phase, callID string, outputs responses.ResponseInputParam) error {
	return t.save([]byte(t.resp.RawJSON()), phase, callID, outputs)
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
