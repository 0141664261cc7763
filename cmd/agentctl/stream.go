package main

import (
	"fmt"
	"io"

	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/runner"
)

// streamText prints the model's text to w as it arrives (made printable:
// the model's text never reaches the terminal as control sequences), a
// line break after each text part.
func streamText(w io.Writer) *runner.Streaming {
	return &runner.Streaming{OnEvent: func(ev responses.ResponseStreamEventUnion) {
		switch ev.Type {
		case "response.output_text.delta":
			fmt.Fprint(w, runner.Printable(ev.Delta))
		case "response.output_text.done":
			fmt.Fprintln(w)
		}
	}}
}
