package agentd

import (
	"context"
	"fmt"
	"image"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/codeexec"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/scaling"
)

// execGrace is how long an exec may run past its code's deadline: stopping
// the worker and releasing what it held.
const execGrace = 10 * time.Second

// fenceWait bounds how long a take over waits for the running code to be
// stopped (its worker killed, what it held released) before it answers.
// The gate refuses the code's input either way; this only makes the person
// start on a desktop where nothing of the code is still held.
const fenceWait = 10 * time.Second

// runExec runs one exec in the session's code session, made at the first.
// A take over of the desktop stops it (codeRuns.stopAll): its result then
// says a person took over.
func (s *session) runExec(sessCtx, ctx context.Context, req request) {
	if s.srv.cfg.Code == nil {
		s.replyError(sessCtx, req.id, wire.CodeUnavailable, "code execution is off: agentd was started without --code", -1)
		return
	}
	if s.code == nil {
		s.code = s.srv.cfg.Code.Open(codeDesktop{s})
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	run := s.srv.runs.add(stop)
	// A take since handle's check would have missed this run: stop it now.
	if s.srv.lease.isHeld() {
		stop(codeexec.ErrTakenOver)
	}
	res, err := s.code.Exec(ctx, req.code, req.timeout)
	s.srv.runs.done(run)
	if err != nil {
		e := &wire.Error{Code: wire.CodeInternal, Message: "exec: " + err.Error(), FailedIndex: -1}
		if ctx.Err() != nil {
			e = s.stopError(sessCtx, ctx.Err(), 0, "during exec")
			e.Message += ": the worker was stopped, its namespace is lost"
			e.FailedIndex = -1
		}
		res.Images = nil
		s.send(sessCtx, wire.Reply{Op: wire.OpError, ID: req.id, Error: e, Exec: &res})
		return
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.srv.writeFrame(sessCtx, s.conn, websocket.MessageText, marshal(wire.Reply{Op: wire.OpDone, ID: req.id, Exec: &res})); err != nil {
		s.srv.cfg.Logf("session: write exec reply: %v", err)
		return
	}
	for _, im := range res.Images {
		if err := s.srv.writeFrame(sessCtx, s.conn, websocket.MessageBinary, im.PNG); err != nil {
			s.srv.cfg.Logf("session: write exec image: %v", err)
			return
		}
	}
}

// closeCode ends the session's code session: its worker is killed and what
// it held released.
func (s *session) closeCode() {
	if s.code == nil {
		return
	}
	if err := s.code.Close(); err != nil {
		s.srv.cfg.Logf("session: close code session: %v", err)
	}
	s.code = nil
}

// codeRuns are the execs in progress (one per controller session at most,
// and a session that is ending may still be stopping its own).
type codeRuns struct {
	mu   sync.Mutex
	runs map[*codeRun]struct{}
}

type codeRun struct {
	stop context.CancelCauseFunc
	done chan struct{}
}

func (c *codeRuns) add(stop context.CancelCauseFunc) *codeRun {
	r := &codeRun{stop: stop, done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[*codeRun]struct{}{}
	}
	c.runs[r] = struct{}{}
	return r
}

func (c *codeRuns) done(r *codeRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, r)
	close(r.done)
}

// stopAll stops every exec in progress with cause and waits until they have
// ended, or ctx ends. It reports whether they all ended.
func (c *codeRuns) stopAll(ctx context.Context, cause error) bool {
	c.mu.Lock()
	runs := make([]*codeRun, 0, len(c.runs))
	for r := range c.runs {
		r.stop(cause)
		runs = append(runs, r)
	}
	c.mu.Unlock()
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// modelInput runs fn, an input of the model (the controller's action or its
// code's), unless blocked says the lease forbids it (ok false: nothing
// ran). The check and the input hold inputMu together, so a take over
// waits for the input and none starts after it.
func (s *Server) modelInput(blocked func() bool, fn func() error) (ok bool, err error) {
	s.inputMu.Lock()
	defer s.inputMu.Unlock()
	if blocked() {
		return false, nil
	}
	return true, fn()
}

// codeBlocked is the lease check of the code's input: a person holds the
// desktop. It is the exec's own check (handle): a hand back the session has
// not collected does not stop code, which has no screenshot to be out of
// date.
func (d codeDesktop) codeBlocked() bool { return d.s.srv.lease.isHeld() }

// codeDesktop is the session as the code sees it: its current view,
// captures under the server's screen lock, and input through the same
// gate as the controller's (modelInput).
type codeDesktop struct{ s *session }

var _ codeexec.Desktop = codeDesktop{}

func (d codeDesktop) Transform() scaling.Transform { return d.s.transform }

func (d codeDesktop) Capture(ctx context.Context, use func(*image.RGBA) error) error {
	d.s.srv.screenMu.Lock()
	defer d.s.srv.screenMu.Unlock()
	img, err := d.s.srv.cfg.Screen.Capture(ctx)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return use(img)
}

func (d codeDesktop) Do(ctx context.Context, a actions.Action) (executor.Result, error) {
	var res executor.Result
	ok, err := d.s.srv.modelInput(d.codeBlocked, func() error {
		var err error
		res, err = d.s.srv.cfg.Exec.Do(ctx, a)
		return err
	})
	if !ok {
		return res, codeexec.ErrTakenOver
	}
	return res, err
}

func (d codeDesktop) Press(h codeexec.Held, down bool) error {
	ok, err := d.s.srv.modelInput(d.codeBlocked, func() error { return press(d.s.srv.cfg.Hold, h, down) })
	if !ok {
		return codeexec.ErrTakenOver
	}
	return err
}

// Release is agentd's clean up, not the model's input: it runs in turn with
// other input, lease or not.
func (d codeDesktop) Release(h codeexec.Held) error {
	d.s.srv.inputMu.Lock()
	defer d.s.srv.inputMu.Unlock()
	return press(d.s.srv.cfg.Hold, h, false)
}

func press(in Holder, h codeexec.Held, down bool) error {
	switch {
	case h.Button != "" && down:
		return in.ButtonDown(h.Button)
	case h.Button != "":
		return in.ButtonUp(h.Button)
	case down:
		return in.KeyDown(h.Key)
	default:
		return in.KeyUp(h.Key)
	}
}
