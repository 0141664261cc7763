package browser_test

import (
	"context"
	"errors"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions/browser"
	browsertool "github.com/agentd-dev/agentd/runner/browser"
)

// formDriver is a driver that can read the page and fill a form.
type formDriver interface {
	browser.StateReader
	browser.PageReader
	browser.Typer
	browser.OptionSelector
	browser.Clicker
}

func askAHuman(context.Context, browser.ConsentRequest) (any, error) { return false, nil }

// One turn of a loop that owns its requests: declare the tools, run the
// browser calls of a response, send their outputs back.
func Example() {
	var driver formDriver // the application's driver
	ctx := context.Background()
	client := openai.NewClient()

	ts, err := browser.New(driver,
		browser.WithMembers(browser.ReadPage, browser.Type, browser.SelectOption, browser.Click),
		browser.WithConfirm(askAHuman))
	if err != nil {
		panic(err)
	}
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "gpt-5.4",
		Tools: browsertool.Tools(ts),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Fill in the pickup form")},
	})
	if err != nil {
		panic(err)
	}
	var calls []browser.Call
	for _, item := range resp.Output {
		if item.Type == "function_call" && ts.Claims(item.Name) {
			calls = append(calls, browsertool.CallOf(item.AsFunctionCall()))
		}
	}
	batch, err := ts.Prepare(calls)
	if err != nil {
		panic(err)
	}
	res, err := batch.Run(ctx)
	var stop *browser.StopError
	if errors.As(err, &stop) {
		panic(stop) // an invalid result or state, a failed state read or consent callback, or cancellation
	}
	_, _ = client.Responses.New(ctx, responses.ResponseNewParams{
		Model:              "gpt-5.4",
		Tools:              browsertool.Tools(ts),
		PreviousResponseID: openai.String(resp.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: browsertool.InputItems(res)},
	})
}
