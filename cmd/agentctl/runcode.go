package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner"
)

// codeConn is what code mode needs of a guest connection besides guestConn.
type codeConn interface {
	runner.CodeRunner
	Hello() wire.Hello
	Screenshot(ctx context.Context) (guest.Screenshot, error)
}

// runCode runs the task in code mode: the model's one tool is exec_py, its
// code runs in the guest's worker, in the coordinates of conn's view.
func runCode(ctx context.Context, conn guestConn, opts runner.RunOptions) (*runner.RunResult, error) {
	cc, ok := conn.(codeConn)
	if !ok {
		return nil, errors.New("code mode needs a connection to agentd")
	}
	if !slices.Contains(cc.Hello().Capabilities, "exec") {
		return nil, errors.New("the guest's agentd runs without --code: start the guest with 'agentctl guest up --code'")
	}
	// The view reaches agentd with a screenshot; code then sees the screen
	// as the model would in computer mode.
	if _, err := cc.Screenshot(ctx); err != nil {
		return nil, fmt.Errorf("set the view: %w", err)
	}
	opts.Tools = append(opts.Tools, runner.NewCodeTool(cc, runner.CodeOptions{}))
	return runner.NewRunner(openai.NewClient()).Run(ctx, opts)
}
