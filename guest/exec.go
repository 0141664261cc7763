package guest

import (
	"context"
	"errors"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
)

// Exec runs Python code in the session's code worker (agentd --code), in the
// coordinates of the current view. deadline 0 is agentd's default. An
// exception in the code is not an error: it is in the result's Traceback.
// When ctx ends the worker is stopped and its namespace lost; the error then
// carries the result so far.
func (c *Client) Exec(ctx context.Context, code string, deadline time.Duration) (wire.ExecResult, error) {
	rep, _, err := c.call(ctx, wire.Request{Op: wire.OpExec, Code: code, DeadlineMS: deadline.Milliseconds()}, nil)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && rep.Exec != nil {
			return *rep.Exec, err
		}
		return wire.ExecResult{}, err
	}
	if rep.Exec == nil {
		return wire.ExecResult{}, errors.New("guest: agentd sent no exec result")
	}
	return *rep.Exec, nil
}

// binarySizes lists the binary frames that follow a reply, in order.
func binarySizes(rep wire.Reply) []int {
	switch {
	case rep.Screenshot != nil:
		return []int{rep.Screenshot.Bytes}
	case rep.Exec != nil:
		sizes := make([]int, len(rep.Exec.Images))
		for i, im := range rep.Exec.Images {
			sizes[i] = im.Bytes
		}
		return sizes
	}
	return nil
}
