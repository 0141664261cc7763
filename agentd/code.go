package agentd

import (
	"context"
	"fmt"
	"image"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/wire"
)

// execGrace is how long an exec may run past its code's deadline: stopping
// the worker and releasing what it held.
const execGrace = 10 * time.Second

// runExec runs one exec in the session's code session, made at the first.
func (s *session) runExec(sessCtx, ctx context.Context, req request) {
	if s.srv.cfg.Code == nil {
		s.replyError(sessCtx, req.id, wire.CodeUnavailable, "code execution is off: agentd was started without --code", -1)
		return
	}
	if s.code == nil {
		s.code = s.srv.cfg.Code.Open(codeDesktop{s})
	}
	res, err := s.code.Exec(ctx, req.code, req.timeout)
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

// codeDesktop is the session as the code sees it: its current view, and
// captures under the server's screen lock.
type codeDesktop struct{ s *session }

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
