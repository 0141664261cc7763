package browser

import (
	"context"
	"fmt"
	"sync"

	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/runner"
)

// Tool is a BrowserToolset as one runner.Tool: its members are the run's
// function tools, and the browser calls of each response run as one browser
// batch, so the toolset's rules about a response hold in a run (an invalid
// call runs nothing of the response; a generic failure skips the response's
// remaining browser calls). Consent is the toolset's own (confirm, the URL
// policy), asked call by call as the batch runs. It never closes the toolset.
type Tool struct {
	ts *browser.BrowserToolset

	mu    sync.Mutex
	batch *batch // of the response being prepared
}

// NewTool returns the toolset as a runner tool.
func NewTool(ts *browser.BrowserToolset) *Tool { return &Tool{ts: ts} }

// batch gathers one response's browser calls; the first Execute runs them
// all and the others take their outputs.
type batch struct {
	step    *runner.Step
	calls   []browser.Call
	ran     bool
	outputs map[string]responses.ResponseInputItemFunctionCallOutputParam
	err     error
}

// Params declares the enabled members as strict function tools.
func (t *Tool) Params() []responses.ToolUnionParam { return Tools(t.ts) }

// Claims reports whether item is a function call of an enabled member.
func (t *Tool) Claims(item responses.ResponseOutputItemUnion) bool {
	return item.Type == "function_call" && t.ts.Claims(item.Name)
}

// Prepare adds the call to its response's batch. The arguments are
// validated when the batch runs, where an invalid one is answered to the
// model rather than stopping the run.
func (t *Tool) Prepare(s *runner.Step, item responses.ResponseOutputItemUnion) (runner.Call, error) {
	fc := item.AsFunctionCall()
	if fc.Status != "" && fc.Status != responses.ResponseFunctionToolCallStatusCompleted {
		return nil, fmt.Errorf("browser call %s (%s) is %s, not completed", fc.CallID, fc.Name, fc.Status)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.batch == nil || t.batch.step != s {
		t.batch = &batch{step: s}
	}
	t.batch.calls = append(t.batch.calls, CallOf(fc))
	return &call{t: t, b: t.batch, id: fc.CallID}, nil
}

type call struct {
	t  *Tool
	b  *batch
	id string
}

func (c *call) CallID() string { return c.id }

// Approve asks nothing: the toolset asks confirm and the URL policy itself,
// right before each call's driver method.
func (c *call) Approve(context.Context, *runner.Step) error { return nil }

// Execute runs the response's batch (once) and answers this call.
func (c *call) Execute(ctx context.Context, s *runner.Step) (responses.ResponseInputItemUnionParam, error) {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	b := c.b
	if !b.ran {
		b.ran = true
		b.err = b.run(ctx, c.t.ts, s)
	}
	if b.err != nil {
		return responses.ResponseInputItemUnionParam{}, b.err
	}
	out, ok := b.outputs[c.id]
	if !ok {
		return responses.ResponseInputItemUnionParam{}, fmt.Errorf("browser call %s has no output", c.id)
	}
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &out}, nil
}

func (b *batch) run(ctx context.Context, ts *browser.BrowserToolset, s *runner.Step) error {
	prepared, err := ts.Prepare(b.calls)
	if err != nil {
		return err
	}
	res, err := prepared.Run(ctx)
	for _, r := range res.Calls {
		s.Event(CallEvent(r))
		if r.Attempted {
			s.Attempted(r.CallID)
		}
		if r.Outcome != browser.OutcomeStopped && r.Attempted {
			s.Completed(r.CallID)
		}
	}
	b.outputs = make(map[string]responses.ResponseInputItemFunctionCallOutputParam, len(res.Outputs))
	for _, o := range res.Outputs {
		b.outputs[o.CallID] = OutputParam(o)
	}
	return err
}

// CallEvent is what a run records and shows of a browser call: the member
// and how it ended, never the arguments or the page's content.
func CallEvent(r browser.CallRecord) runner.Event {
	ev := runner.Event{Kind: runner.EventFunction, CallID: r.CallID, Duration: runner.Duration(r.Duration),
		Function: &runner.FunctionEvent{Name: string(r.Member)}}
	if r.Outcome != browser.OutcomeOK {
		ev.Function.Error = string(r.Outcome)
	}
	return ev
}
