package agentd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/codeexec"
)

// serveOperate serves one operator connection: a person's take over, input
// and hand back (wire operate.go). Requests are served one at a time, in
// order. When the connection ends while it holds the lease, the lease stays
// held (orphaned) and every key and button is released.
func (s *Server) serveOperate(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	conn, ctx, end := s.acceptSide(w, r, &s.ops, wire.OperateSubprotocol, "operate: ")
	if conn == nil {
		return
	}
	defer end()
	conn.SetReadLimit(wire.MaxRequestBytes)

	op := &operator{}
	defer func() {
		if s.lease.leave(op) {
			s.cfg.Logf("operate: the operator holding the desktop went away; it stays taken over until handed back")
			s.inputMu.Lock()
			if err := s.cfg.Exec.ReleaseAll(); err != nil {
				s.cfg.Logf("operate: release all: %v", err)
			}
			s.inputMu.Unlock()
		}
	}()
	hello := wire.OperatorHello{Hello: s.hello(), Lease: s.lease.state(op)}
	if err := s.writeFrame(ctx, conn, websocket.MessageText, marshal(hello)); err != nil {
		conn.CloseNow()
		return
	}
	malformed := 0
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) || isReadLimit(err) {
				conn.Close(websocket.StatusMessageTooBig, fmt.Sprintf("message over the %d byte limit", wire.MaxRequestBytes))
				return
			}
			conn.CloseNow()
			return
		}
		var rep wire.OperatorReply
		if typ != websocket.MessageText {
			rep = s.operatorError(op, 0, wire.CodeBadRequest, "requests are JSON text frames")
		} else {
			rep = s.operate(ctx, op, data)
		}
		if rep.Error != nil && rep.Error.Code == wire.CodeBadRequest {
			malformed++
		} else {
			malformed = 0
		}
		if err := s.writeFrame(ctx, conn, websocket.MessageText, marshal(rep)); err != nil {
			conn.CloseNow()
			return
		}
		if malformed >= maxMalformedInARow {
			conn.Close(websocket.StatusPolicyViolation, fmt.Sprintf("%d malformed messages in a row", malformed))
			return
		}
	}
}

// operate serves one operator request.
func (s *Server) operate(ctx context.Context, op *operator, data []byte) wire.OperatorReply {
	var req wire.OperatorRequest
	if err := decodeStrict(data, &req); err != nil {
		return s.operatorError(op, messageID(data), wire.CodeBadRequest, "malformed request: "+err.Error())
	}
	if req.ID == 0 {
		return s.operatorError(op, 0, wire.CodeBadRequest, "request needs a non-zero id")
	}
	switch req.Op {
	case wire.OpTake:
		if len(req.By) > 64 || !utf8.ValidString(req.By) {
			return s.operatorError(op, req.ID, wire.CodeBadRequest, "by must be UTF-8 of at most 64 bytes")
		}
		by := req.By
		if by == "" {
			by = "an operator"
		}
		// Under inputMu: a model action running now ends first, and none
		// starts after this.
		s.inputMu.Lock()
		to, err := s.lease.take(op, by)
		s.inputMu.Unlock()
		if err != nil {
			return s.operatorError(op, req.ID, wire.CodeBusy, err.Error())
		}
		// The model's code running now is stopped, and what it held
		// released, before the person is told the desktop is theirs.
		fctx, fcancel := context.WithTimeout(ctx, fenceWait)
		stopped := s.runs.stopAll(fctx, codeexec.ErrTakenOver)
		fcancel()
		if !stopped {
			s.cfg.Logf("operate: the model's code was not stopped within %s of the take over; its input is refused all the same", fenceWait)
		}
		s.cfg.Logf("operate: the desktop is taken over by %s; the controller's requests are refused until it is handed back", by)
		if to != nil {
			to.tell(ctx, wire.LeaseEvent{Op: wire.OpLease, Held: true, By: by})
		}
		return s.operatorDone(op, req.ID, nil)
	case wire.OpInput:
		if req.Action == nil {
			return s.operatorError(op, req.ID, wire.CodeBadRequest, `input request has no "action"`)
		}
		a := *req.Action
		w, h := s.cfg.Screen.Size()
		for _, p := range a.Points() {
			if p.X < 0 || p.Y < 0 || p.X >= w || p.Y >= h {
				return s.operatorError(op, req.ID, wire.CodeBadRequest, fmt.Sprintf("%s: point (%d,%d) is off the %dx%d screen", a.Type, p.X, p.Y, w, h))
			}
		}
		actx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
		s.inputMu.Lock()
		if !s.lease.holds(op) {
			s.inputMu.Unlock()
			return s.operatorError(op, req.ID, wire.CodeNotHolding, "this connection does not hold the desktop: take it first")
		}
		res, err := s.cfg.Exec.Do(actx, a)
		s.lease.did(a)
		s.inputMu.Unlock()
		if err != nil {
			s.cfg.Logf("operate: %s failed: %v", a.Type, err)
		}
		ar := resultOf(0, a, res, err)
		rep := s.operatorDone(op, req.ID, &ar)
		if err != nil {
			rep.Op, rep.Error = wire.OpError, &wire.Error{Code: wire.CodeFailed, Message: fmt.Sprintf("%s: %s", a.Type, ar.Error), FailedIndex: 0}
		}
		return rep
	case wire.OpHandBack:
		if len(req.Note) > wire.MaxNoteLen || !utf8.ValidString(req.Note) {
			return s.operatorError(op, req.ID, wire.CodeBadRequest, fmt.Sprintf("the note must be UTF-8 of at most %d bytes", wire.MaxNoteLen))
		}
		to, dropped, err := s.lease.handBack(op, req.Note)
		if err != nil {
			return s.operatorError(op, req.ID, wire.CodeNotHolding, err.Error())
		}
		if dropped {
			s.cfg.Logf("operate: the desktop was handed back after the controller session it was taken during ended: the hand back and its note are dropped, no other session gets them")
		} else {
			s.cfg.Logf("operate: the desktop was handed back")
			to.tell(ctx, wire.LeaseEvent{Op: wire.OpLease})
		}
		return s.operatorDone(op, req.ID, nil)
	}
	return s.operatorError(op, req.ID, wire.CodeBadRequest, fmt.Sprintf("unknown op %q: an operator sends take, input or hand_back", req.Op))
}

func (s *Server) operatorDone(op *operator, id uint64, res *wire.ActionResult) wire.OperatorReply {
	return wire.OperatorReply{Op: wire.OpDone, ID: id, Result: res, Lease: s.lease.state(op)}
}

func (s *Server) operatorError(op *operator, id uint64, code, msg string) wire.OperatorReply {
	return wire.OperatorReply{Op: wire.OpError, ID: id, Error: &wire.Error{Code: code, Message: msg, FailedIndex: -1}, Lease: s.lease.state(op)}
}

// takenOver is the controller's refusal while a person holds the desktop
// or after they handed it back, until the controller collects the hand
// back.
func takenOver(what string) string {
	return "a person holds or has just held the desktop (taken over): " + what + " was refused, not queued; collect the hand back first (" + wire.OpAwaitHandback + ")"
}

// tell pushes a lease event to the controller session s, unasked. A
// session that has ended misses it: it has no run to tell.
func (s *session) tell(ctx context.Context, ev wire.LeaseEvent) {
	if err := s.write(ctx, websocket.MessageText, marshal(ev)); err != nil {
		s.srv.cfg.Logf("operate: telling the controller of the lease: %v", err)
	}
}
