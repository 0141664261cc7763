package agentd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/scaling"
)

// handle runs one request to its single reply.
func (s *session) handle(sessCtx context.Context, req request) {
	timeout := s.srv.cfg.RequestTimeout
	if req.op == wire.OpExec {
		// The code's own deadline stops it; this bounds the rest.
		timeout = req.timeout + execGrace
	}
	ctx, cancel := context.WithTimeout(sessCtx, timeout)
	if req.op == wire.OpAwaitHandback {
		// A person may hold the desktop for long: only a cancel or the
		// session's end stops the wait.
		cancel()
		ctx, cancel = context.WithCancel(sessCtx)
	}
	s.mu.Lock()
	s.runningID, s.cancelRun, s.cancelledB = req.id, cancel, false
	select {
	case <-s.gos: // meant for an earlier request
	default:
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.runningID, s.cancelRun = 0, nil
		s.mu.Unlock()
		cancel()
	}()

	switch req.op {
	case wire.OpScreenshot:
		// Batches and actions are refused action by action (runActions).
		if s.srv.lease.blocks(s) {
			s.replyError(sessCtx, req.id, wire.CodeTakenOver, takenOver(req.op), -1)
			return
		}
	case wire.OpExec, wire.OpBrowser:
		if s.srv.lease.isHeld() {
			s.replyError(sessCtx, req.id, wire.CodeTakenOver, takenOver(req.op), -1)
			return
		}
	}
	switch req.op {
	case wire.OpAwaitHandback:
		hb, err := s.srv.lease.await(ctx, s)
		if err != nil {
			s.replyError(sessCtx, req.id, wire.CodeCancelled, s.stopError(sessCtx, err, -1, "waiting for the hand back, step").Message, -1)
			return
		}
		s.send(sessCtx, wire.Reply{Op: wire.OpDone, ID: req.id, Handback: &hb})
	case wire.OpBatch, wire.OpAction:
		s.runActions(sessCtx, ctx, req)
	case wire.OpScreenshot:
		if req.view != nil {
			t, err := s.viewTransform(*req.view)
			if err != nil {
				s.replyError(sessCtx, req.id, wire.CodeBadRequest, err.Error(), -1)
				return
			}
			s.view, s.transform = *req.view, t
		}
		s.replyWithScreenshot(sessCtx, ctx, wire.Reply{Op: wire.OpDone, ID: req.id})
	case wire.OpExec:
		s.runExec(sessCtx, ctx, req)
	case wire.OpBrowser:
		s.runBrowser(sessCtx, ctx, req)
	case wire.OpReleaseAll:
		if err := s.srv.cfg.Exec.ReleaseAll(); err != nil {
			s.srv.cfg.Logf("release all failed: %v", err)
			s.replyError(sessCtx, req.id, wire.CodeInternal, "release all: "+publicMessage(err, "failed (the detail is in agentd's log)"), -1)
			return
		}
		s.send(sessCtx, wire.Reply{Op: wire.OpDone, ID: req.id})
	}
}

func (s *session) viewTransform(v wire.View) (scaling.Transform, error) {
	w, h := s.srv.cfg.Screen.Size()
	t, err := scaling.New(scaling.Size{W: w, H: h}, v.Crop, v.Width, v.Height, v.Fit)
	if err != nil {
		return scaling.Transform{}, fmt.Errorf("bad view: %w", err)
	}
	return t, nil
}

// runActions validates every action of the request against the current view,
// then runs them in order, stopping at the first failure. A batch ends with
// one screenshot, unless the request was cancelled or its session ended.
func (s *session) runActions(sessCtx, ctx context.Context, req request) {
	// A batch's view applies from its screenshot on: its actions are in the
	// image space of the screenshot before.
	var view *scaling.Transform
	if req.op == wire.OpBatch && req.view != nil {
		t, err := s.viewTransform(*req.view)
		if err != nil {
			s.replyError(sessCtx, req.id, wire.CodeBadRequest, err.Error(), -1)
			return
		}
		view = &t
	}
	screenActions := make([]actions.Action, len(req.actions))
	for i, a := range req.actions {
		sa, err := s.toScreen(a)
		if err != nil {
			s.replyError(sessCtx, req.id, wire.CodeBadRequest, (&indexError{i, err}).Error(), i)
			return
		}
		screenActions[i] = sa
	}

	results := make([]wire.ActionResult, 0, len(screenActions))
	var failure *wire.Error
	for i, a := range screenActions {
		if err := ctx.Err(); err != nil {
			failure = s.stopError(sessCtx, err, i, "before action")
			break
		}
		if req.gate {
			if err := s.awaitGo(sessCtx, ctx, req.id, i); err != nil {
				failure = s.stopError(sessCtx, err, i, "before action")
				break
			}
		}
		res, ok, err := s.modelInput(ctx, a)
		if !ok {
			failure = &wire.Error{Code: wire.CodeTakenOver, Message: takenOver(fmt.Sprintf("action %d (%s)", i, a.Type)), FailedIndex: i}
			break
		}
		if err != nil {
			s.srv.cfg.Logf("action %d (%s) failed: %v", i, a.Type, err)
		}
		ar := resultOf(i, a, res, err)
		results = append(results, ar)
		if req.op == wire.OpBatch {
			s.send(sessCtx, wire.Progress{Op: wire.OpProgress, ID: req.id, Result: ar})
		}
		if err != nil {
			if ctx.Err() != nil {
				failure = s.stopError(sessCtx, ctx.Err(), i, "during action")
			} else {
				failure = &wire.Error{Code: wire.CodeFailed, Message: fmt.Sprintf("action %d (%s): %s", i, a.Type, ar.Error), FailedIndex: i}
			}
			break
		}
	}
	reply := wire.Reply{Op: wire.OpDone, ID: req.id, Results: results}
	if failure != nil {
		reply.Op, reply.Error = wire.OpError, failure
	}
	if req.op == wire.OpBatch && req.gate && failure == nil {
		// The screenshot is a step of its own: nothing that failed or was
		// not approved gets one.
		if err := s.awaitGo(sessCtx, ctx, req.id, len(screenActions)); err != nil {
			reply.Op, reply.Error = wire.OpError, s.stopError(sessCtx, err, len(screenActions), "before the screenshot, step")
		}
	}
	if req.op == wire.OpBatch && ctx.Err() == nil && (!req.gate || reply.Error == nil) && (failure == nil || failure.Code != wire.CodeTakenOver) {
		if view != nil {
			s.view, s.transform = *req.view, *view
		}
		s.replyWithScreenshot(sessCtx, ctx, reply)
		return
	}
	s.send(sessCtx, reply)
}

// modelInput performs a controller's action unless a person holds the
// desktop or handed it back and the session has not collected the hand
// back yet (ok false: nothing ran), through the server's gate.
func (s *session) modelInput(ctx context.Context, a actions.Action) (executor.Result, bool, error) {
	var res executor.Result
	ok, err := s.srv.modelInput(func() bool { return s.srv.lease.blocks(s) }, func() error {
		var err error
		res, err = s.srv.cfg.Exec.Do(ctx, a)
		return err
	})
	return res, ok, err
}

// awaitGo tells the client that step index of gated request id is next and
// waits for its go, or for the request to end (a refusal is a cancel).
func (s *session) awaitGo(sessCtx, ctx context.Context, id uint64, index int) error {
	s.send(sessCtx, wire.Ready{Op: wire.OpReady, ID: id, Index: index})
	for {
		select {
		case i := <-s.gos:
			if i == index {
				return nil
			}
			// A go for another step is a late duplicate: wait for this one.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stopError describes why a request stopped early: the client's cancel, the
// request timeout, or the session ending.
func (s *session) stopError(sessCtx context.Context, err error, index int, where string) *wire.Error {
	s.mu.Lock()
	byClient := s.cancelledB
	s.mu.Unlock()
	switch {
	case byClient:
		return &wire.Error{Code: wire.CodeCancelled, Message: fmt.Sprintf("cancelled by the client %s %d", where, index), FailedIndex: index}
	case errors.Is(err, context.DeadlineExceeded) && sessCtx.Err() == nil:
		return &wire.Error{Code: wire.CodeTimeout, Message: fmt.Sprintf("request timed out after %s %s %d", s.srv.cfg.RequestTimeout, where, index), FailedIndex: index}
	default:
		return &wire.Error{Code: wire.CodeCancelled, Message: fmt.Sprintf("session ended %s %d", where, index), FailedIndex: index}
	}
}

// toScreen maps an action from the view's image space to the screen; a point
// outside the image is an error.
func (s *session) toScreen(a actions.Action) (actions.Action, error) {
	pts := a.Points()
	if len(pts) == 0 {
		return a, nil
	}
	out := make([]actions.Point, len(pts))
	for i, p := range pts {
		x, y, err := s.transform.ToScreen(p.X, p.Y)
		if err != nil {
			return a, err
		}
		out[i] = actions.Point{X: x, Y: y}
	}
	a = a.WithPoints(out)
	if a.Type == actions.Scroll {
		// Scroll amounts are image pixels too: the model saw the content move
		// by image pixels, so scale them like distances (no crop offset).
		t := s.transform
		a.ScrollX = scaleDistance(a.ScrollX, t.Crop.W, t.Image.W)
		a.ScrollY = scaleDistance(a.ScrollY, t.Crop.H, t.Image.H)
	}
	return a, nil
}

// scaleDistance maps an image-space distance to screen pixels, rounding half
// away from zero so a non-zero distance never becomes zero.
func scaleDistance(d, screen, image int) int {
	if d == 0 || screen == image {
		return d
	}
	v := (abs(d)*screen*2 + image) / (2 * image)
	if v == 0 {
		v = 1
	}
	if d < 0 {
		return -v
	}
	return v
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func resultOf(i int, a actions.Action, res executor.Result, err error) wire.ActionResult {
	ar := wire.ActionResult{Index: i, Type: string(a.Type), OK: err == nil, DurationUS: res.Duration.Microseconds()}
	if err != nil {
		ar.Error = publicMessage(err, string(a.Type)+" failed (the detail is in agentd's log)")
	}
	if a.Type == actions.Scroll {
		ar.ScrollSteps = &actions.Point{X: res.ScrollSteps.X, Y: res.ScrollSteps.Y}
	}
	if a.Type == actions.Wait {
		settled := res.Settled
		ar.WaitedMS = res.Waited.Milliseconds()
		ar.Settled = &settled
	}
	return ar
}

// replyWithScreenshot captures, renders and sends reply followed by the PNG.
// If the screenshot fails, the reply becomes an error that still carries the
// action results.
func (s *session) replyWithScreenshot(sessCtx, ctx context.Context, reply wire.Reply) {
	start := time.Now()
	s.srv.screenMu.Lock()
	img, err := s.srv.cfg.Screen.Capture(ctx)
	captured := time.Now()
	if err == nil {
		s.png.Reset()
		err = s.srv.cfg.Imager.Render(&s.png, img, s.transform)
	}
	s.srv.screenMu.Unlock()
	if err != nil {
		s.srv.cfg.Logf("screenshot failed: %v", err)
		if reply.Error == nil {
			reply.Op = wire.OpError
			reply.Error = &wire.Error{Code: wire.CodeInternal, Message: "screenshot failed: " + publicMessage(err, "the detail is in agentd's log"), FailedIndex: -1}
		}
		s.send(sessCtx, reply)
		return
	}
	reply.Screenshot = &wire.ScreenshotMeta{
		Transform: s.transform,
		Bytes:     s.png.Len(),
		CaptureUS: captured.Sub(start).Microseconds(),
		EncodeUS:  time.Since(captured).Microseconds(),
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.srv.writeFrame(sessCtx, s.conn, websocket.MessageText, marshal(reply)); err != nil {
		s.srv.cfg.Logf("session: write reply: %v", err)
		return
	}
	if err := s.srv.writeFrame(sessCtx, s.conn, websocket.MessageBinary, s.png.Bytes()); err != nil {
		s.srv.cfg.Logf("session: write screenshot: %v", err)
	}
}

func (s *session) send(ctx context.Context, v any) {
	if err := s.write(ctx, websocket.MessageText, marshal(v)); err != nil {
		s.srv.cfg.Logf("session: write: %v", err)
	}
}

// publicMessage is what a client may see of err, which the caller logs in
// full: the message of the outermost error in its chain that offers one
// safe to show (a Public method, as the executor's errors have), else
// fallback. What X, the capture or the worker said stays in the log: it
// names displays, files and error codes a client has no business seeing.
func publicMessage(err error, fallback string) string {
	var p interface{ Public() string }
	if errors.As(err, &p) {
		return p.Public()
	}
	return fallback
}
