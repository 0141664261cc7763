package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// countingFunction is a function tool "note" that counts its runs.
func countingFunction(t *testing.T, runs *atomic.Int32) *Function {
	t.Helper()
	f, err := NewFunction("note", "", func(context.Context, struct{}) (Output, error) {
		runs.Add(1)
		return Text("noted"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Without Eager a streamed call waits for the whole response: the server
// holds the stream after the call's item and finds it not yet run.
// Observers see the SDK's events, each its own copy.
func TestStreamWaitsForTheCompleteResponse(t *testing.T) {
	var runs atomic.Int32
	turn := respserver.Items(respserver.FunctionCall("note", `{}`), respserver.Message("working", "commentary"))
	turn.Stream.AfterItem = func(i int) error {
		if n := runs.Load(); n != 0 {
			return errors.New("the call ran before the response was complete")
		}
		return nil
	}
	srv, url := respserver.Start(turn, respserver.Final("done"))
	t.Cleanup(srv.Close)

	var types []string
	var text strings.Builder
	observer := func(ev responses.ResponseStreamEventUnion) {
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		// Spoiling the copy must not reach the run.
		if ev.Type == "response.completed" {
			for k := range ev.Response.Output {
				ev.Response.Output[k].Type = "spoiled"
			}
		}
	}
	r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey)))
	res, err := r.Run(context.Background(), RunOptions{Model: "m", Input: "go", Tools: []Tool{countingFunction(t, &runs)},
		Stream: &Streaming{OnEvent: observer}})
	if err != nil || res.FinalMessage != "done" || runs.Load() != 1 || len(res.CompletedCallIDs) != 1 {
		t.Fatalf("res %+v err %v runs %d", res, err, runs.Load())
	}
	noViolations(t, srv)
	if text.String() != "workingdone" || types[0] != "response.created" || !slices.Contains(types, "response.function_call_arguments.done") {
		t.Fatalf("observed text %q events %v", text.String(), types)
	}
}

// A stream cut before its end starts nothing and says so.
func TestStreamCutStartsNothing(t *testing.T) {
	var runs atomic.Int32
	turn := respserver.Items(respserver.FunctionCall("note", `{}`), respserver.FunctionCall("note", `{}`))
	turn.Stream.Cut = 2
	srv, url := respserver.Start(turn, respserver.Final("done"))
	t.Cleanup(srv.Close)
	r := NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(testKey), option.WithMaxRetries(0)))
	_, err := r.Run(context.Background(), RunOptions{Model: "m", Input: "go", Tools: []Tool{countingFunction(t, &runs)}, Stream: &Streaming{}})
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "stream") || runs.Load() != 0 || len(re.CompletedCallIDs) != 0 {
		t.Fatalf("err %v runs %d", err, runs.Load())
	}
	noViolations(t, srv)
}
