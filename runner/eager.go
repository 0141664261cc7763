package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/openai/openai-go/v3/responses"
)

// eagerTurn runs the calls of one streamed response as their items
// complete (Streaming.Eager). The items [0, handled) were claimed as they
// completed and their calls run; the rest of the response is handled as
// a whole once complete.
type eagerTurn struct {
	l    *loop
	s    *Step
	opts *Streaming
	// save writes the checkpoints before and after each call, with the
	// response as far as it was observed.
	save func(raw []byte, phase, callID string, outputs responses.ResponseInputParam) error
	// concurrent lets independent functions run side by side (no ledger).
	concurrent bool
	max        int

	// wait is set once the rest of the turn must wait for the complete
	// response (a deferred call, an item out of order or after a gap, a
	// changed item, an item that does not claim cleanly).
	wait bool
	// created is the response as response.created announced it.
	created map[string]json.RawMessage
	// items are the items completed in order, as received.
	items   []json.RawMessage
	handled int
	// calls ran early, in order; at[k] is the output index of calls[k],
	// results[k] its outcome.
	calls   []Call
	at      []int
	results []*earlyResult
	final   []string
	// group is the independent calls running now.
	group   sync.WaitGroup
	inGroup int
}

type earlyResult struct {
	out  responses.ResponseInputItemUnionParam
	err  error
	done bool
}

// newEagerTurn prepares the eager handling of one response, or returns
// nil when its calls must wait for the complete response.
func (l *loop) newEagerTurn(s *Step, opts *RunOptions, last bool, save func(raw []byte, phase, callID string, outputs responses.ResponseInputParam) error) *eagerTurn {
	st := opts.Stream
	if st == nil || !st.Eager || last {
		// The last allowed request starts no effects.
		return nil
	}
	for _, t := range l.tools {
		if lr, ok := t.(LateResulter); ok && lr.LateResults() {
			// A server tool's result may arrive later and fail the turn.
			return nil
		}
	}
	max := st.MaxConcurrentCalls
	if max == 0 {
		max = DefaultMaxConcurrentCalls
	}
	return &eagerTurn{l: l, s: s, opts: st, save: save, concurrent: opts.Ledger == nil, max: max}
}

// event handles one stream event.
func (e *eagerTurn) event(ctx context.Context, ev responses.ResponseStreamEventUnion) error {
	if ev.Type == "response.created" {
		_ = json.Unmarshal([]byte(ev.Response.RawJSON()), &e.created)
		e.s.x.responseID = ev.Response.ID
		return nil
	}
	if !ev.JSON.OutputIndex.Valid() {
		return nil
	}
	i := int(ev.OutputIndex)
	if i < len(e.items) {
		// An event about an item already completed: the same item again is
		// harmless, anything else changes it.
		if ev.Type == "response.output_item.done" && sameJSON([]byte(ev.Item.RawJSON()), e.items[i]) {
			return nil
		}
		e.wait = true
		return e.changed(i, "a later "+ev.Type+" event changed it")
	}
	if ev.Type != "response.output_item.done" || e.wait {
		return nil
	}
	if i != len(e.items) {
		// Out of order, or a gap: the order is not known yet.
		e.wait = true
		return nil
	}
	e.items = append(e.items, json.RawMessage(ev.Item.RawJSON()))
	return e.handle(ctx, i, ev.Item)
}

// changed stops the run if the item at index i had a call started.
func (e *eagerTurn) changed(i int, how string) error {
	k := slices.Index(e.at, i)
	if k < 0 {
		return nil
	}
	if err := e.drain(); err != nil {
		return err
	}
	return fmt.Errorf("response %s: output item %d (call %s) was executed early, then %s; its effects cannot be undone: check the real state before going on",
		e.s.ResponseID(), i, e.calls[k].CallID(), how)
}

// handle claims the completed item i and runs its call if it may run
// early.
func (e *eagerTurn) handle(ctx context.Context, i int, item responses.ResponseOutputItemUnion) error {
	c, text, err := e.l.claimOne(e.s, i, item)
	if err != nil {
		// The complete response will say what is wrong with it.
		e.wait = true
		return nil
	}
	if c == nil {
		if text != "" {
			e.final = append(e.final, text)
		}
		e.handled = i + 1
		return nil
	}
	if !e.early(ctx, i, item, c) {
		e.wait = true
		return nil
	}
	independent := e.concurrent && isIndependent(c)
	if !independent {
		// Everything else keeps the order: what runs now comes after the
		// group.
		if err := e.drain(); err != nil {
			return err
		}
	}
	if err := c.Approve(ctx, e.s); err != nil {
		return err
	}
	r := &earlyResult{}
	e.calls, e.at, e.results = append(e.calls, c), append(e.at, i), append(e.results, r)
	e.handled = i + 1
	if independent {
		e.inGroup++
		e.group.Add(1)
		go func() {
			defer e.group.Done()
			r.out, r.err = c.Execute(ctx, e.s)
			r.done = r.err == nil
		}()
		if e.inGroup >= e.max {
			return e.drain()
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cancelled before call %s: %w", c.CallID(), err)
	}
	raw := e.observed()
	if err := e.save(raw, PhaseBeforeCall, c.CallID(), e.outputs()); err != nil {
		return err
	}
	r.out, r.err = c.Execute(ctx, e.s)
	if r.err != nil {
		return r.err
	}
	r.done = true
	return e.save(raw, PhaseAfterCall, c.CallID(), e.outputs())
}

// early decides whether the completed call c may start now.
func (e *eagerTurn) early(ctx context.Context, i int, item responses.ResponseOutputItemUnion, c Call) bool {
	if p := e.opts.EarlyExecution; p != nil {
		switch item.Type {
		case "computer_call":
			if !p.Computer {
				return false
			}
		case "function_call", "custom_tool_call":
			if !slices.Contains(p.Functions, item.Name) {
				return false
			}
		default:
			return false
		}
	}
	switch item.Type {
	case "computer_call", "function_call", "custom_tool_call":
	default:
		// MCP approvals and anything else wait for the whole response.
		return false
	}
	f := e.opts.BeforeEarlyCall
	if f == nil {
		return true
	}
	name := ""
	if item.Type != "computer_call" {
		name = item.Name
	}
	info := EarlyCall{Type: item.Type, Name: name, CallID: c.CallID(), OutputIndex: i}
	decision := EarlyDefer
	func() {
		defer func() { _ = recover() }()
		decision = f(ctx, info)
	}()
	return decision == EarlyRun
}

func isIndependent(c Call) bool {
	ic, ok := c.(IndependentCall)
	return ok && ic.Independent()
}

// drain waits for the running group and returns the first error of its
// calls, in the response's order.
func (e *eagerTurn) drain() error {
	if e.inGroup == 0 {
		return nil
	}
	e.group.Wait()
	e.inGroup = 0
	for _, r := range e.results {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// outputs are the answers of the calls completed so far, in order.
func (e *eagerTurn) outputs() responses.ResponseInputParam {
	var out responses.ResponseInputParam
	for _, r := range e.results {
		if r.done {
			out = append(out, r.out)
		}
	}
	return out
}

// observed is the response as far as it was observed: what
// response.created announced, with the items completed in order.
func (e *eagerTurn) observed() []byte {
	m := make(map[string]json.RawMessage, len(e.created)+1)
	for k, v := range e.created {
		m[k] = v
	}
	m["output"], _ = json.Marshal(e.items)
	raw, _ := json.Marshal(m)
	return raw
}

// settle checks the early part of the turn against the complete response
// resp and returns the calls run early, their outputs, and the index
// from which resp is still to be handled with the final texts found so
// far. A completed item that the final response changed or left out stops
// the run if a call ran early; if none did, the whole response is handled
// afresh.
func (e *eagerTurn) settle(resp *responses.Response) (ran []Call, outputs responses.ResponseInputParam, from int, final []string, err error) {
	for i := 0; i < e.handled; i++ {
		if i < len(resp.Output) && sameJSON([]byte(resp.Output[i].RawJSON()), e.items[i]) {
			continue
		}
		how := "the final response changed it"
		if i >= len(resp.Output) {
			how = "the final response left it out"
		}
		if len(e.calls) == 0 {
			return nil, nil, 0, nil, nil
		}
		k := slices.IndexFunc(e.at, func(at int) bool { return at >= i })
		if k < 0 {
			k = len(e.at) - 1
		}
		return nil, nil, 0, nil, fmt.Errorf("response %s: output item %d was completed while call %s had already run early, then %s; its effects cannot be undone: check the real state before going on",
			resp.ID, i, e.calls[k].CallID(), how)
	}
	return e.calls, e.outputs(), e.handled, e.final, nil
}

// sameJSON compares two JSON values, ignoring layout and key order.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
