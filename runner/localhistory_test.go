package runner

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// A local-history run (store false) of several local steps re-sends the whole
// history each time; respserver checks that every earlier call is answered
// exactly once, by its kind, besides the calls just made.
func TestLocalHistoryRunOfManySteps(t *testing.T) {
	ts, srv, d := setup(t,
		respserver.Call(shot),
		respserver.Items(respserver.Reasoning("gAAAA-one"), respserver.ComputerCall(`{"type":"click","x":3,"y":4}`),
			respserver.FunctionCall("lookup_pickup", `{"reference":"A","days":1,"note":null}`)),
		respserver.Call(`{"type":"type","text":"hi"}`),
		respserver.Items(respserver.Reasoning("gAAAA-two"), respserver.ComputerCall(shot)),
		respserver.Final("done"))
	var n, seen int
	o := opts()
	o.Store = openai.Bool(false)
	o.Tools = []Tool{lookup(t, d, &n, &seen, func(pickupArgs) (Output, error) { return Text("Friday"), nil })}
	if _, err := ts.Run(runCtx(), o, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	noViolations(t, srv)
	if got := d.kinds(); !slices.Equal(got, []string{"screenshot", "click", "screenshot", "type", "screenshot", "screenshot"}) {
		t.Fatalf("driver calls %v", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 || n != 1 {
		t.Fatalf("%d requests, %d function calls", len(reqs), n)
	}
	var last struct {
		Input []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		} `json:"input"`
	}
	if err := json.Unmarshal(reqs[4].Body, &last); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]int{}
	for _, it := range last.Input {
		if it.Type == "computer_call_output" || it.Type == "function_call_output" {
			outputs[it.Type]++
		}
	}
	if outputs["computer_call_output"] != 4 || outputs["function_call_output"] != 1 {
		t.Fatalf("the last request re-sends %v, want every output of the run", outputs)
	}
}
