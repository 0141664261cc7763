package respserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func streamParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "m",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("task")},
		Tools: []responses.ToolUnionParam{
			{OfComputer: &responses.ComputerToolParam{}},
			{OfFunction: &responses.FunctionToolParam{Name: "lookup", Parameters: map[string]any{"type": "object"}}},
		},
	}
}

// The real SDK's streaming client reads the events item by item while the
// server still holds the rest of the response back.
func TestStreamThroughSDK(t *testing.T) {
	seen := make(chan struct{})
	turn := Items(ComputerCall(`{"type":"click","x":1,"y":2,"button":"left"}`), FunctionCall("lookup", `{"q":"pickup"}`), Message("all done", "final_answer"))
	turn.Stream.AfterItem = func(i int) error {
		if i == 0 {
			<-seen // the client has the first item before the server goes on
		}
		return nil
	}
	var types []string
	var args, text strings.Builder
	var done []responses.ResponseOutputItemUnion
	var final responses.Response
	readStream(t, turn, func(ev responses.ResponseStreamEventUnion) {
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_item.done":
			done = append(done, ev.Item)
			if ev.OutputIndex == 0 {
				close(seen)
			}
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	})
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Fatalf("events %v", types)
	}
	if args.String() != `{"q":"pickup"}` || text.String() != "all done" {
		t.Fatalf("deltas: args %q text %q", args.String(), text.String())
	}
	if len(done) != 3 || done[0].Type != "computer_call" || len(done[0].Actions) != 1 || done[0].Actions[0].X != 1 {
		t.Fatalf("items done: %+v", done)
	}
	if final.Status != "completed" || len(final.Output) != 3 || final.Output[1].CallID != done[1].CallID || final.Output[2].Content[0].Text != "all done" {
		t.Fatalf("final response: %+v", final)
	}
}

// A cut stream gives the client the items done before the cut, then an error.
func TestStreamCut(t *testing.T) {
	turn := Items(FunctionCall("lookup", `{}`), FunctionCall("lookup", `{}`))
	turn.Stream.Cut = 2
	s, url := Start(turn)
	defer s.Close()

	c := Client(url)
	stream := c.Responses.NewStreaming(context.Background(), streamParams())
	defer stream.Close()
	var done int
	var completed bool
	for stream.Next() {
		switch stream.Current().Type {
		case "response.output_item.done":
			done++
		case "response.completed":
			completed = true
		}
	}
	if stream.Err() == nil || completed || done != 1 {
		t.Fatalf("cut stream: err %v, completed %v, items done %d", stream.Err(), completed, done)
	}
}

// doneIndices reads a stream through the SDK and returns the output_index
// of each response.output_item.done and the final response.
func doneIndices(t *testing.T, turn Turn) ([]int64, []responses.ResponseOutputItemUnion, responses.Response) {
	t.Helper()
	var idx []int64
	var items []responses.ResponseOutputItemUnion
	var final responses.Response
	readStream(t, turn, func(ev responses.ResponseStreamEventUnion) {
		switch ev.Type {
		case "response.output_item.done":
			idx = append(idx, ev.OutputIndex)
			items = append(items, ev.Item)
		case "response.completed":
			final = ev.Response
		}
	})
	return idx, items, final
}

// readStream serves turn and reads its stream through the SDK, handing
// each event to each; it fails t if the stream or the server saw an error.
func readStream(t *testing.T, turn Turn, each func(responses.ResponseStreamEventUnion)) {
	t.Helper()
	s, url := Start(turn)
	defer s.Close()
	c := Client(url)
	stream := c.Responses.NewStreaming(context.Background(), streamParams())
	defer stream.Close()
	for stream.Next() {
		each(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// The faults a stream can carry, as the SDK reads them.
func TestStreamFaults(t *testing.T) {
	three := func() Turn {
		return Items(FunctionCall("lookup", `{"q":"a"}`), FunctionCall("lookup", `{"q":"b"}`), FunctionCall("lookup", `{"q":"c"}`))
	}
	t.Run("out of order", func(t *testing.T) {
		turn := three()
		turn.Stream.OutOfOrder = 2
		idx, items, final := doneIndices(t, turn)
		if !slices.Equal(idx, []int64{0, 2, 1}) || items[1].Arguments.OfString != `{"q":"c"}` || final.Output[1].Arguments.OfString != `{"q":"b"}` {
			t.Fatalf("indices %v, items %+v", idx, items)
		}
	})
	t.Run("gap", func(t *testing.T) {
		turn := three()
		turn.Stream.Gap = 1
		idx, items, final := doneIndices(t, turn)
		if !slices.Equal(idx, []int64{0, 2, 3}) || items[1].Arguments.OfString != `{"q":"b"}` || len(final.Output) != 3 {
			t.Fatalf("indices %v, final %d items", idx, len(final.Output))
		}
	})
	t.Run("changed", func(t *testing.T) {
		turn := three()
		turn.Stream.Change = &ItemChange{Index: 0, After: 1, Item: Item{"arguments": `{"q":"z"}`}}
		idx, items, final := doneIndices(t, turn)
		if !slices.Equal(idx, []int64{0, 1, 0, 2}) || items[2].Arguments.OfString != `{"q":"z"}` || items[2].CallID != items[0].CallID ||
			final.Output[0].Arguments.OfString != `{"q":"z"}` {
			t.Fatalf("indices %v, items %+v", idx, items)
		}
	})
	t.Run("removed", func(t *testing.T) {
		turn := three()
		turn.Stream.Change = &ItemChange{Index: 0, After: 0, Remove: true}
		idx, _, final := doneIndices(t, turn)
		if !slices.Equal(idx, []int64{0, 1, 2}) || len(final.Output) != 2 || final.Output[0].Arguments.OfString != `{"q":"b"}` {
			t.Fatalf("indices %v, final %+v", idx, final.Output)
		}
	})
}
