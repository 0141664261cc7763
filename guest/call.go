package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/runner/computer"
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

// Run implements computer.Driver with one batch request: agentd checks
// every action against the view before running any, runs them in order and
// takes the screenshot. With h.Before set the batch is gated: agentd asks
// before each step and waits for the answer, so Before is asked immediately
// before each action and before the screenshot; without it nothing waits.
// The view set with SetView applies from this call's screenshot on.
func (c *Client) Run(ctx context.Context, as []actions.Action, h computer.Hooks) (computer.Screenshot, error) {
	if len(as) == 0 {
		if h.Before != nil {
			if err := h.Before(ctx, computer.Step{Index: 0, Final: true}); err != nil {
				return computer.Screenshot{}, err
			}
		}
		return c.Screenshot(ctx)
	}
	c.viewMu.Lock()
	view := c.view
	c.viewMu.Unlock()
	req := wire.Request{Op: wire.OpBatch, Actions: as, View: view, Gate: h.Before != nil}
	var onReady func(context.Context, int) error
	if h.Before != nil {
		onReady = func(ctx context.Context, i int) error {
			if i > len(as) {
				return fmt.Errorf("guest: agentd announced step %d of a batch of %d", i, len(as))
			}
			return h.Before(ctx, computer.Step{Index: i, Final: i == len(as)})
		}
	}
	rep, png, err := c.callGated(ctx, req, h.Done, onReady)
	if err != nil {
		return computer.Screenshot{}, err
	}
	if rep.Screenshot == nil {
		return computer.Screenshot{}, fmt.Errorf("guest: agentd sent no screenshot")
	}
	c.viewMu.Lock()
	if c.view == view {
		c.view = nil
	}
	c.viewMu.Unlock()
	return computer.Screenshot{PNG: png, Transform: rep.Screenshot.Transform}, nil
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

// DoAll performs the actions in order, stopping at the first failure, with
// no screenshot. agentd checks all of them before running any, so a bad
// action anywhere means none runs; an error's FailedIndex is the index in as.
func (c *Client) DoAll(ctx context.Context, as []actions.Action) ([]wire.ActionResult, error) {
	rep, _, err := c.call(ctx, wire.Request{Op: wire.OpAction, Actions: as}, nil)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e.Results, err
		}
		return nil, err
	}
	if len(rep.Results) != len(as) {
		return rep.Results, fmt.Errorf("guest: agentd answered %d results for %d actions", len(rep.Results), len(as))
	}
	return rep.Results, nil
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
	return c.callGated(ctx, req, onProgress, nil)
}

// callGated is call for a gated batch: onReady is asked before each step
// agentd announces, and agentd runs the step only once it returns nil; its
// error cancels the request and is the call's error.
func (c *Client) callGated(ctx context.Context, req wire.Request, onProgress func(wire.ActionResult), onReady func(ctx context.Context, index int) error) (wire.Reply, []byte, error) {
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
	var refused error // onReady's refusal
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
			m, err := parseServerMessage(f.data)
			if err != nil {
				return wire.Reply{}, nil, fmt.Errorf("guest: %w", err)
			}
			if r := m.ready; r != nil {
				if r.ID != req.ID || onReady == nil || cancelSent {
					continue
				}
				if err := onReady(ctx, r.Index); err != nil {
					refused = err
					if werr := c.sendCancel(req.ID); werr != nil {
						return wire.Reply{}, nil, c.lost(progress, -1, werr)
					}
					cancelSent, ctxDone = true, nil
					grace := time.NewTimer(cancelGrace)
					defer grace.Stop()
					graceOver = grace.C
					continue
				}
				goMsg, _ := json.Marshal(wire.Request{ID: c.nextID.Add(1), Op: wire.OpGo, Target: req.ID, Index: r.Index})
				if werr := c.send(goMsg); werr != nil {
					return wire.Reply{}, nil, c.lost(progress, -1, werr)
				}
				continue
			}
			rep, prog := m.reply, m.progress
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
			if refused != nil {
				// What ran is in the results; the refusal is why it stopped.
				return rep, png, refused
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
			why := ctx.Err()
			if refused != nil {
				why = refused
			}
			return wire.Reply{}, nil, fmt.Errorf("%w: agentd did not confirm the cancel; %d action(s) completed, action %d may have run",
				why, len(progress), len(progress))
		case <-ctxDone:
			cancelSent = true
			ctxDone = nil
			if werr := c.sendCancel(req.ID); werr != nil {
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

// serverMessage is one text message from agentd: exactly one of its
// fields is set (reply, when the others are nil).
type serverMessage struct {
	reply    wire.Reply
	progress *wire.Progress
	ready    *wire.Ready
}

func parseServerMessage(data []byte) (serverMessage, error) {
	var head struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return serverMessage{}, fmt.Errorf("malformed message from agentd: %w", err)
	}
	switch head.Op {
	case wire.OpProgress:
		var p wire.Progress
		if err := json.Unmarshal(data, &p); err != nil {
			return serverMessage{}, fmt.Errorf("malformed progress from agentd: %w", err)
		}
		return serverMessage{progress: &p}, nil
	case wire.OpReady:
		var r wire.Ready
		if err := json.Unmarshal(data, &r); err != nil || r.Index < 0 {
			return serverMessage{}, fmt.Errorf("malformed ready from agentd: %s", data)
		}
		return serverMessage{ready: &r}, nil
	case wire.OpDone, wire.OpError:
		var r wire.Reply
		if err := json.Unmarshal(data, &r); err != nil {
			return serverMessage{}, fmt.Errorf("malformed reply from agentd: %w", err)
		}
		if r.Op == wire.OpError && r.Error == nil {
			return serverMessage{}, fmt.Errorf("agentd sent an error without a reason")
		}
		return serverMessage{reply: r}, nil
	}
	return serverMessage{}, fmt.Errorf("unexpected message %q from agentd", head.Op)
}

// sendCancel asks agentd to stop request id.
func (c *Client) sendCancel(id uint64) error {
	msg, _ := json.Marshal(wire.Request{ID: c.nextID.Add(1), Op: wire.OpCancel, Target: id})
	return c.send(msg)
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
