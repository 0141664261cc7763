package runner_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// Step through a run and stop before a call the caller does not want: the
// turn is shown before any of its calls runs, so leaving the loop runs
// nothing of it and sends no further request.
func ExampleRunner_Iterate() {
	// A scripted model (respserver) asks for a lookup, then for a refund.
	srv, url := respserver.Start(
		respserver.Items(respserver.FunctionCall("lookup", `{"order":"A12"}`)),
		respserver.Items(respserver.Message("Refunding it.", "commentary"), respserver.FunctionCall("refund", `{"order":"A12"}`)),
		respserver.Final("done"))
	defer srv.Close()

	type order struct {
		Order string `json:"order"`
	}
	lookup, _ := runner.NewFunction("lookup", "Look an order up.", func(_ context.Context, o order) (runner.Output, error) {
		fmt.Println("  looked up", o.Order)
		return runner.Text("shipped"), nil
	})
	refund, _ := runner.NewFunction("refund", "Refund an order.", func(_ context.Context, o order) (runner.Output, error) {
		fmt.Println("  refunded", o.Order)
		return runner.Text("refunded"), nil
	})

	r := runner.NewRunner(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-example")))
	it := r.Iterate(context.Background(), runner.RunOptions{Model: "gpt-5.4", Input: "Check order A12.",
		Tools: []runner.Tool{lookup, refund}})
	for turn := range it.Turns() {
		fmt.Printf("turn %d: %d call(s) deferred, messages %q\n", turn.Step, len(turn.Deferred), turn.Messages)
		if len(turn.Calls) > 0 && turn.Calls[0].Name == "refund" {
			fmt.Println("stop: no refund without a person")
			break
		}
	}
	_, err := it.Result()
	var re *runner.RunError
	if errors.As(err, &re) && errors.Is(err, runner.ErrStopped) {
		fmt.Printf("stopped after %d requests; %d call(s) completed\n", re.Steps, len(re.CompletedCallIDs))
	}
	// Output:
	// turn 1: 1 call(s) deferred, messages []
	//   looked up A12
	// turn 2: 1 call(s) deferred, messages ["Refunding it."]
	// stop: no refund without a person
	// stopped after 2 requests; 1 call(s) completed
}
