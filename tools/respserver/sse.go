package respserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// Streaming is how a turn answers a request with "stream": true; the zero
// value streams the whole response at once. The events are the API's
// Server-Sent Events: response.created and response.in_progress, then per
// output item response.output_item.added, its argument or text deltas and
// their done events, response.output_item.done, and at the end
// response.completed (or response.incomplete / response.failed).
type Streaming struct {
	// ItemDelay holds back each output item after the first, as a model
	// writing one action after another would.
	ItemDelay time.Duration
	// TailDelay holds back the final event after the last item.
	TailDelay time.Duration
	// Cut drops the connection, without the final event, after the first
	// Cut-1 items are done (Cut 1 cuts right after response.created).
	Cut int
	// AfterItem, if set, runs after the item at output index i is done and
	// holds the stream until it returns; an error is recorded as a
	// violation (so a test can check what the client did while the
	// response was still arriving).
	AfterItem func(i int) error

	// OutOfOrder, if above 0, sends the item at output index OutOfOrder
	// before the one at OutOfOrder-1, each with its own output_index.
	OutOfOrder int
	// Gap, if above 0, numbers the items from output index Gap on one
	// higher in the stream, so no item has index Gap; the final response
	// lists the items as they are.
	Gap int
	// Change, if set, changes an item after it was done.
	Change *ItemChange
}

// ItemChange changes the item at output index Index once the item at
// After (Index or later) is done: a second response.output_item.done for
// Index carries Item's fields over the original ones (its id and call_id
// kept), and the final response has the changed item. Remove instead
// leaves the item out of the final response, with no event saying so. The
// server still expects the next request to answer the calls as first
// sent.
type ItemChange struct {
	Index, After int
	Item         Item
	Remove       bool
}

// wantsStream reports whether a create-response body asks for a stream.
func wantsStream(body []byte) bool {
	var req struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &req) == nil && req.Stream
}

// sse writes Server-Sent Events, numbering them as the API does.
type sse struct {
	w   http.ResponseWriter
	f   http.Flusher
	seq int
}

func (e *sse) send(typ string, fields map[string]any) {
	ev := map[string]any{"type": typ, "sequence_number": e.seq}
	maps.Copy(ev, fields)
	e.seq++
	data, _ := json.Marshal(ev)
	_, _ = fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", typ, data)
	if e.f != nil {
		e.f.Flush()
	}
}

// stream answers with resp as an event stream. It returns false if the
// client went away while the stream was held back.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, resp map[string]any, st Streaming) bool {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Request-Id", "req_"+randomHex(16))
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	e := &sse{w: w, f: f}

	resp = jsonValue(resp).(map[string]any) // plain JSON values, item by item
	output, _ := resp["output"].([]any)
	start := maps.Clone(resp)
	start["status"], start["output"], start["completed_at"] = "in_progress", []any{}, nil
	delete(start, "usage")
	e.send("response.created", map[string]any{"response": start})
	e.send("response.in_progress", map[string]any{"response": start})

	wait := func(d time.Duration) bool {
		if d <= 0 {
			return true
		}
		select {
		case <-time.After(d):
			return true
		case <-r.Context().Done():
			return false
		}
	}
	cut := func() {
		// A dropped connection, not a clean end: the client sees an
		// unexpected EOF in the chunked body.
		panic(http.ErrAbortHandler)
	}
	order := make([]int, len(output))
	for k := range order {
		order[k] = k
	}
	if k := st.OutOfOrder; k > 0 && k < len(order) {
		order[k-1], order[k] = order[k], order[k-1]
	}
	index := func(i int) int {
		if st.Gap > 0 && i >= st.Gap {
			return i + 1
		}
		return i
	}
	final := resp
	if c := st.Change; c != nil && c.Index >= 0 && c.Index < len(output) {
		changed := slices.Clone(output)
		if c.Remove {
			changed = slices.Delete(changed, c.Index, c.Index+1)
		} else {
			item := maps.Clone(output[c.Index].(map[string]any))
			for k, v := range jsonValue(c.Item).(map[string]any) {
				if k != "id" && k != "call_id" {
					item[k] = v
				}
			}
			changed[c.Index] = item
		}
		final = maps.Clone(resp)
		final["output"] = changed
	}
	for pos, i := range order {
		if st.Cut == pos+1 {
			cut()
		}
		if pos > 0 && !wait(st.ItemDelay) {
			return false
		}
		sendItem(e, index(i), output[i].(map[string]any))
		if st.AfterItem != nil {
			if err := st.AfterItem(i); err != nil {
				s.mu.Lock()
				s.violations = append(s.violations, fmt.Sprintf("stream after item %d: %v", i, err))
				s.mu.Unlock()
			}
		}
		if c := st.Change; c != nil && c.After == i && !c.Remove && c.Index < len(output) {
			e.send("response.output_item.done", map[string]any{"output_index": index(c.Index), "item": final["output"].([]any)[c.Index]})
		}
	}
	if st.Cut == len(output)+1 {
		cut()
	}
	if !wait(st.TailDelay) {
		return false
	}
	last := "response.completed"
	switch resp["status"] {
	case "incomplete":
		last = "response.incomplete"
	case "failed":
		last = "response.failed"
	}
	e.send(last, map[string]any{"response": final})
	return true
}

// sendItem streams one output item: added (in progress, with empty
// arguments or text), the deltas, then done with the item as it is.
func sendItem(e *sse, i int, item map[string]any) {
	id, _ := item["id"].(string)
	added := maps.Clone(item)
	if _, ok := added["status"]; ok {
		added["status"] = "in_progress"
	}
	switch item["type"] {
	case "function_call", "mcp_approval_request":
		added["arguments"] = ""
	case "custom_tool_call":
		added["input"] = ""
	case "message":
		added["content"] = []any{}
	}
	e.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
	switch item["type"] {
	case "function_call":
		args, _ := item["arguments"].(string)
		for _, d := range halves(args) {
			e.send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": d})
		}
		e.send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "name": item["name"], "arguments": args})
	case "custom_tool_call":
		in, _ := item["input"].(string)
		for _, d := range halves(in) {
			e.send("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": i, "delta": d})
		}
		e.send("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": i, "input": in})
	case "message":
		parts, _ := item["content"].([]any)
		for k, p := range parts {
			part, _ := p.(map[string]any)
			empty := maps.Clone(part)
			if _, ok := empty["text"]; ok {
				empty["text"] = ""
			}
			e.send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": k, "part": empty})
			if text, ok := part["text"].(string); ok && part["type"] == "output_text" {
				for _, d := range halves(text) {
					e.send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": k, "delta": d, "logprobs": []any{}})
				}
				e.send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": k, "text": text, "logprobs": []any{}})
			}
			e.send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": k, "part": part})
		}
	}
	e.send("response.output_item.done", map[string]any{"output_index": i, "item": item})
}

// halves splits s in two deltas, so a client sees a partial value between
// them (none for an empty s).
func halves(s string) []string {
	if s == "" {
		return nil
	}
	if len(s) == 1 {
		return []string{s}
	}
	r := []rune(s)
	return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
}
