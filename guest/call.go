package guest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/computer"
	"github.com/agentd-dev/agentd/wire"
)

// writeTimeout bounds one request write: agentd reads continuously, so a
// write that takes this long means the connection is gone.
const writeTimeout = 10 * time.Second

// BatchResult is what a batch did, and the screenshot taken after it.
type BatchResult struct {
	Results    []wire.ActionResult
	Screenshot Screenshot
}

var (
	_ computer.Driver  = (*Client)(nil)
	_ computer.Stepper = (*Client)(nil)
)

// Run implements computer.Driver: one request per action, then the
// screenshot.
func (c *Client) Run(ctx context.Context, as []actions.Action, h computer.Hooks) (computer.Screenshot, error) {
	return computer.Sequential(c).Run(ctx, as, h)
}

// Do performs one action, its coordinates in the image space of the latest
// screenshot. No screenshot is taken.
func (c *Client) Do(ctx context.Context, a actions.Action) (wire.ActionResult, error) {
	rep, _, err := c.call(ctx, wire.Request{Op: wire.OpAction, Action: &a}, nil)
	if err != nil {
		return firstResult(err), err
	}
	if len(rep.Results) != 1 {
		return wire.ActionResult{}, fmt.Errorf("guest: agentd answered %d results for one action", len(rep.Results))
	}
	return rep.Results[0], nil
}

func firstResult(err error) wire.ActionResult {
	if e, ok := err.(*Error); ok && len(e.Results) > 0 {
		return e.Results[0]
	}
	return wire.ActionResult{}
}

// Batch performs the actions in order, stopping at the first failure, and
// returns a screenshot taken after them. agentd validates the whole batch
// before running any of it. onProgress, if set, sees each action's result as
// it completes.
func (c *Client) Batch(ctx context.Context, as []actions.Action, onProgress func(wire.ActionResult)) (BatchResult, error) {
	rep, png, err := c.call(ctx, wire.Request{Op: wire.OpBatch, Actions: as}, onProgress)
	res := BatchResult{Results: rep.Results}
	if rep.Screenshot != nil {
		res.Screenshot = Screenshot{PNG: png, Transform: rep.Screenshot.Transform}
	}
	return res, err
}

// Screenshot returns the screen in the current view.
func (c *Client) Screenshot(ctx context.Context) (Screenshot, error) {
	c.viewMu.Lock()
	view := c.view
	c.viewMu.Unlock()
	rep, png, err := c.call(ctx, wire.Request{Op: wire.OpScreenshot, View: view}, nil)
	if err != nil {
		return Screenshot{}, err
	}
	if rep.Screenshot == nil {
		return Screenshot{}, fmt.Errorf("guest: agentd sent no screenshot")
	}
	c.viewMu.Lock()
	if c.view == view {
		c.view = nil
	}
	c.viewMu.Unlock()
	return Screenshot{PNG: png, Transform: rep.Screenshot.Transform}, nil
}

// ReleaseAll releases every key and button agentd holds.
func (c *Client) ReleaseAll(ctx context.Context) error {
	_, _, err := c.call(ctx, wire.Request{Op: wire.OpReleaseAll}, nil)
	return err
}

// Click clicks button at (x, y) holding keys.
func (c *Client) Click(ctx context.Context, x, y int, button actions.Button, keys ...string) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.Click, X: x, Y: y, Button: button, Keys: keys})
}

// DoubleClick double-clicks the left button at (x, y) holding keys.
func (c *Client) DoubleClick(ctx context.Context, x, y int, keys ...string) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.DoubleClick, X: x, Y: y, Keys: keys})
}

// Drag presses the left button at path[0], moves through path and releases.
func (c *Client) Drag(ctx context.Context, path []actions.Point, keys ...string) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.Drag, Path: path, Keys: keys})
}

// Keypress presses keys together and releases them in reverse order.
func (c *Client) Keypress(ctx context.Context, keys ...string) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.Keypress, Keys: keys})
}

// Move moves the pointer to (x, y) holding keys.
func (c *Client) Move(ctx context.Context, x, y int, keys ...string) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.Move, X: x, Y: y, Keys: keys})
}

// Scroll scrolls by (dx, dy) pixels at (x, y) holding keys.
func (c *Client) Scroll(ctx context.Context, x, y, dx, dy int, keys ...string) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.Scroll, X: x, Y: y, ScrollX: dx, ScrollY: dy, Keys: keys})
}

// Type types text into the focused control.
func (c *Client) Type(ctx context.Context, text string) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.TypeText, Text: text})
}

// Wait returns when the screen has stopped changing, bounded by agentd.
func (c *Client) Wait(ctx context.Context) (wire.ActionResult, error) {
	return c.Do(ctx, actions.Action{Type: actions.Wait})
}

// call sends one request and collects its reply (and PNG, if any). It is
// the only place that consumes the inbox, and only one call runs at a time.
func (c *Client) call(ctx context.Context, req wire.Request, onProgress func(wire.ActionResult)) (wire.Reply, []byte, error) {
	if c.closed.Load() {
		return wire.Reply{}, nil, ErrClosed
	}
	if !c.busy.CompareAndSwap(false, true) {
		return wire.Reply{}, nil, ErrBusy
	}
	defer c.busy.Store(false)

	req.ID = c.nextID.Add(1)
	data, err := json.Marshal(req)
	if err != nil {
		return wire.Reply{}, nil, fmt.Errorf("guest: encode request: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return wire.Reply{}, nil, err
	}
	if err := c.send(data); err != nil {
		return wire.Reply{}, nil, c.lost(nil, -1, fmt.Errorf("send %s: %w", req.Op, err))
	}

	var progress []wire.ActionResult
	ctxDone := ctx.Done()
	var graceOver <-chan time.Time
	cancelSent := false
	for {
		select {
		case f, ok := <-c.inbox:
			if !ok {
				return wire.Reply{}, nil, c.lost(progress, inFlight(req, progress), c.readerErr)
			}
			if f.typ != websocket.MessageText {
				continue // a PNG of an abandoned earlier request
			}
			rep, prog, err := parseServerMessage(f.data)
			if err != nil {
				return wire.Reply{}, nil, fmt.Errorf("guest: %w", err)
			}
			if prog != nil {
				if prog.ID == req.ID {
					progress = append(progress, prog.Result)
					if onProgress != nil {
						onProgress(prog.Result)
					}
				}
				continue
			}
			if rep.ID != req.ID {
				continue // the answer to an abandoned earlier request
			}
			var png []byte
			for i, size := range binarySizes(rep) {
				b, ok := <-c.inbox
				if !ok {
					return wire.Reply{}, nil, c.lost(rep.Results, -1, c.readerErr)
				}
				if b.typ != websocket.MessageBinary || len(b.data) != size {
					return wire.Reply{}, nil, fmt.Errorf("guest: binary frame %d does not match its description", i)
				}
				if rep.Screenshot != nil {
					png = b.data
				} else {
					rep.Exec.Images[i].PNG = b.data
				}
			}
			if rep.Op == wire.OpError {
				e := &Error{Code: rep.Error.Code, Message: rep.Error.Message, FailedIndex: rep.Error.FailedIndex, Results: rep.Results}
				if cancelSent && ctx.Err() != nil {
					return rep, png, fmt.Errorf("%w: %w", ctx.Err(), e)
				}
				return rep, png, e
			}
			return rep, png, nil
		case <-graceOver:
			// agentd did not confirm in time: what ran is unknown.
			return wire.Reply{}, nil, fmt.Errorf("%w: agentd did not confirm the cancel; %d action(s) completed, action %d may have run",
				ctx.Err(), len(progress), len(progress))
		case <-ctxDone:
			cancelSent = true
			ctxDone = nil
			cancelMsg, _ := json.Marshal(wire.Request{ID: c.nextID.Add(1), Op: wire.OpCancel, Target: req.ID})
			if werr := c.send(cancelMsg); werr != nil {
				return wire.Reply{}, nil, c.lost(progress, inFlight(req, progress), werr)
			}
			grace := time.NewTimer(cancelGrace)
			defer grace.Stop()
			graceOver = grace.C
		}
	}
}

func inFlight(req wire.Request, progress []wire.ActionResult) int {
	n := len(req.Actions)
	if req.Action != nil {
		n = 1
	}
	if len(progress) < n {
		return len(progress)
	}
	return -1
}

func (c *Client) lost(completed []wire.ActionResult, inflight int, err error) error {
	c.closed.Store(true)
	c.conn.CloseNow()
	c.endConn()
	if err == nil {
		err = ErrClosed
	}
	if cs := websocket.CloseStatus(err); cs != -1 {
		err = fmt.Errorf("agentd closed the session (%d): %w", cs, err)
	}
	return &ConnectionLostError{Completed: completed, InFlight: inflight, Err: err}
}

func parseServerMessage(data []byte) (wire.Reply, *wire.Progress, error) {
	var head struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return wire.Reply{}, nil, fmt.Errorf("malformed message from agentd: %w", err)
	}
	switch head.Op {
	case wire.OpProgress:
		var p wire.Progress
		if err := json.Unmarshal(data, &p); err != nil {
			return wire.Reply{}, nil, fmt.Errorf("malformed progress from agentd: %w", err)
		}
		return wire.Reply{}, &p, nil
	case wire.OpDone, wire.OpError:
		var r wire.Reply
		if err := json.Unmarshal(data, &r); err != nil {
			return wire.Reply{}, nil, fmt.Errorf("malformed reply from agentd: %w", err)
		}
		if r.Op == wire.OpError && r.Error == nil {
			return wire.Reply{}, nil, fmt.Errorf("agentd sent an error without a reason")
		}
		return r, nil, nil
	}
	return wire.Reply{}, nil, fmt.Errorf("unexpected message %q from agentd", head.Op)
}

// send writes one request frame. It never uses the caller's context:
// coder/websocket closes the connection when a write's context ends while the
// write is still returning, and a cancelled call must keep the session (it
// still has to send the cancel and read the answer).
func (c *Client) send(data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, data)
}
