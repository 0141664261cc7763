// Command functiononly is a program that uses the runner with one
// function tool and nothing of agentd's guest: deps_test.go checks what it
// links.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/runner"
)

type weatherArgs struct {
	City string `json:"city"`
}

func main() {
	weather, err := runner.NewFunction("weather", "today's weather in a city",
		func(_ context.Context, a weatherArgs) (runner.Output, error) {
			return runner.Text("sunny in " + a.City), nil
		})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	res, err := runner.NewRunner(openai.NewClient()).Run(context.Background(), runner.RunOptions{
		Model: "gpt-5.4", Input: "What is the weather in Lyon?", Tools: []runner.Tool{weather}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(res.FinalMessage)
}
