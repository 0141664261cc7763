// Command mixed is an example of a mixed run: the computer toolset and one
// typed function tool in the same Responses loop, against a guest desktop.
// The model looks a booking up through the function, then types what it
// found into the desktop.
//
//	export OPENAI_API_KEY=sk-...            # OPENAI_BASE_URL is honoured too
//	go run ./examples/mixed --guest 127.0.0.1:7010 --token-file ~/.local/state/agentd/default/token
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner"
)

// pickupArgs are the function's arguments; their strict schema is derived
// from this type.
type pickupArgs struct {
	Reference string `json:"reference" jsonschema:"the booking reference, for example AB-1234"`
}

// Validate runs after decoding and before the function: invalid arguments
// stop the run and the function never sees them.
func (a pickupArgs) Validate() error {
	if !strings.HasPrefix(a.Reference, "AB-") {
		return errors.New("a reference starts with AB-")
	}
	return nil
}

func main() {
	addr := flag.String("guest", os.Getenv("AGENTD_ADDR"), "agentd's address")
	tokenFile := flag.String("token-file", os.Getenv("AGENTD_TOKEN_FILE"), "the guest's token file")
	model := flag.String("model", "gpt-5.4", "a model with the computer tool")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, *tokenFile, *model); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, tokenFile, model string) error {
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return err
	}
	conn, err := guest.Dial(ctx, addr, strings.TrimSpace(string(token)))
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetView(wire.View{Width: 1280, Height: 800, Fit: true})

	lookup, err := runner.NewFunction("lookup_pickup", "Look up the pickup details of a booking.",
		func(ctx context.Context, a pickupArgs) (runner.Output, error) {
			// A real application would ask its own booking system here.
			return runner.Text(fmt.Sprintf(`{"reference":%q,"name":"Zoë Martín","date":"2026-12-14","time":"10:30"}`, a.Reference)), nil
		})
	if err != nil {
		return err
	}
	ts := runner.New(openai.NewClient(), conn)
	defer ts.Close()
	approver := runner.NewTerminalApprover(os.Stdin, os.Stderr)
	res, err := ts.Run(ctx, runner.RunOptions{
		Model:    model,
		Input:    "Look up booking AB-1234 with lookup_pickup, then open the text editor and type the pickup name, date and time.",
		MaxSteps: 30,
		Tools:    []runner.Tool{lookup},
		OnEvent: func(e runner.Event) {
			if e.Kind == runner.EventFunction || e.Kind == runner.EventAction {
				fmt.Printf("step %d: %s %s\n", e.Step, e.Kind, e.CallID)
			}
		},
	}, runner.CallOptions{ApproveSafetyChecks: approver.ApproveSafetyChecks})
	var re *runner.RunError
	if errors.As(err, &re) {
		return fmt.Errorf("%w (attempted %v, completed %v: check the desktop before retrying)", err, re.AttemptedCallIDs, re.CompletedCallIDs)
	}
	if err != nil {
		return err
	}
	fmt.Printf("done in %d steps: %s\n", res.Steps, runner.Printable(res.FinalMessage))
	return nil
}
