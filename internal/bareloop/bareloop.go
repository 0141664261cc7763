// Package bareloop is the peer the runner's own cost is measured against:
// the computer-use loop written directly on openai-go, doing only what any
// loop must (send the task, decode each call's actions, run them on the
// driver, send the screenshot back) and none of the runner's checks,
// approvals, events or records. agentctl bench and the runner's Go
// benchmarks time the same loop.
package bareloop

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// Turns is the scripted model both measure with: a screenshot, steps calls
// of three mouse moves, a final message. The points wrap so every one stays
// inside the smallest bench screen (800×600).
func Turns(steps int) []respserver.Turn {
	turns := []respserver.Turn{respserver.Call(`{"type":"screenshot"}`)}
	for i := range steps {
		x, y := 100+(i*7)%400, 100+(i*5)%300
		turns = append(turns, respserver.Call(
			fmt.Sprintf(`{"type":"move","x":%d,"y":%d}`, x, y),
			fmt.Sprintf(`{"type":"move","x":%d,"y":%d}`, x+20, y+10),
			fmt.Sprintf(`{"type":"move","x":%d,"y":%d}`, x+40, y+20)))
	}
	return append(turns, respserver.Final("done"))
}

// Run drives task through api and d until a response has no computer
// call. beforeRequest, if set, is called just before each request (the
// measuring callers mark step boundaries there).
func Run(ctx context.Context, api openai.Client, d computer.Driver, model, task string, beforeRequest func()) error {
	params := responses.ResponseNewParams{Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(task)},
		Tools: []responses.ToolUnionParam{{OfComputer: &responses.ComputerToolParam{}}}}
	for {
		if beforeRequest != nil {
			beforeRequest()
		}
		resp, err := api.Responses.New(ctx, params)
		if err != nil {
			return fmt.Errorf("bare loop: %w", err)
		}
		var call *responses.ResponseComputerToolCall
		for _, it := range resp.Output {
			if it.Type == "computer_call" {
				c := it.AsComputerCall()
				call = &c
			}
		}
		if call == nil {
			return nil
		}
		as, err := actions.DecodeList([]byte(call.JSON.Actions.Raw()))
		if err != nil {
			return fmt.Errorf("bare loop: %w", err)
		}
		shot, err := d.Run(ctx, as, computer.Hooks{})
		if err != nil {
			return fmt.Errorf("bare loop: %w", err)
		}
		out := responses.ResponseComputerToolCallOutputScreenshotParam{
			ImageURL: openai.String("data:image/png;base64," + base64.StdEncoding.EncodeToString(shot.PNG)),
		}
		out.SetExtraFields(map[string]any{"detail": "original"})
		params.PreviousResponseID = openai.String(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{{
			OfComputerCallOutput: &responses.ResponseInputItemComputerCallOutputParam{CallID: call.CallID, Output: out}}}}
	}
}
