package agentd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/codeexec"
	"github.com/agentd-dev/agentd/scaling"
)

// maxMalformedInARow ends a session whose client keeps sending garbage: a
// confused or hostile peer must not keep the controller slot forever.
const maxMalformedInARow = 32

// queueDepth bounds requests waiting behind the running one; more is busy.
const queueDepth = 16

func digest(b []byte) []byte {
	d := sha256.Sum256(b)
	return d[:]
}

type request struct {
	id      uint64
	op      string
	actions []actions.Action
	gate    bool // a batch that waits for go before each step
	index   int  // go: the step it lets run
	view    *wire.View
	code    string        // exec
	timeout time.Duration // exec's deadline
	browser *wire.BrowserCall
}

type session struct {
	srv  *Server
	conn *websocket.Conn
	reqs chan request
	// gos carries the running gated batch's go messages to the worker.
	gos chan int

	writeMu sync.Mutex

	mu         sync.Mutex
	runningID  uint64
	cancelRun  context.CancelFunc
	cancelledB bool // the running request was cancelled by the client

	// Owned by the worker goroutine.
	view      wire.View
	transform scaling.Transform
	png       bytes.Buffer
	code      *codeexec.Session // made at the first exec
}

func newSession(srv *Server, conn *websocket.Conn) *session {
	return &session{srv: srv, conn: conn, reqs: make(chan request, queueDepth), gos: make(chan int, 1)}
}

// run serves the session until the client leaves or misbehaves, then
// cancels what runs, releases every input and closes the connection.
func (s *session) run(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	logf := s.srv.cfg.Logf

	hello := s.srv.hello()
	hello.Capabilities = s.srv.cfg.Capabilities
	s.transform = identity(hello.Screen.W, hello.Screen.H)
	if err := s.write(ctx, websocket.MessageText, marshal(hello)); err != nil {
		logf("session: hello failed: %v", err)
		s.conn.CloseNow()
		return
	}
	// After the hello: a lease event must not come first.
	s.srv.lease.attach(s)
	defer func() {
		if hb := s.srv.lease.detach(s); hb != nil {
			logf("session: %d hand back(s) of the desktop this session never collected are dropped: no other session gets them", hb.Leases)
		}
	}()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.worker(ctx) }()
	go func() { defer wg.Done(); s.heartbeat(ctx, cancel) }()

	closeCode, closeReason := s.readLoop(ctx)
	if closeCode == 0 && parent.Err() != nil {
		closeCode, closeReason = websocket.StatusGoingAway, "agentd is shutting down"
	}
	cancel()
	wg.Wait()
	s.closeCode()
	if err := s.srv.cfg.Exec.ReleaseAll(); err != nil {
		logf("session: release all after session end: %v", err)
	}
	if closeCode != 0 {
		s.conn.Close(closeCode, closeReason)
	} else {
		s.conn.CloseNow()
	}
	logf("session ended")
}

// readLoop reads client messages until the connection ends. It returns the
// close status to send, or 0 when the connection is already gone.
func (s *session) readLoop(ctx context.Context) (websocket.StatusCode, string) {
	malformed := 0
	for {
		typ, data, err := s.conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == -1 && ctx.Err() == nil {
				if errors.Is(err, websocket.ErrMessageTooBig) || isReadLimit(err) {
					return websocket.StatusMessageTooBig, fmt.Sprintf("message over the %d byte limit", wire.MaxRequestBytes)
				}
				s.srv.cfg.Logf("session: read: %v", err)
			}
			return 0, ""
		}
		if typ != websocket.MessageText {
			malformed++
			s.replyError(ctx, 0, wire.CodeBadRequest, "requests are JSON text frames", -1)
		} else if req, err := decodeRequest(data); err != nil {
			malformed++
			s.replyError(ctx, req.id, wire.CodeBadRequest, err.Error(), failedIndex(err))
		} else {
			malformed = 0
			s.dispatch(ctx, req)
		}
		if malformed >= maxMalformedInARow {
			return websocket.StatusPolicyViolation, fmt.Sprintf("%d malformed messages in a row", malformed)
		}
	}
}

func isReadLimit(err error) bool {
	return err != nil && bytes.Contains([]byte(err.Error()), []byte("read limited at"))
}

// indexError names the action a request was refused for.
type indexError struct {
	index int
	err   error
}

func (e *indexError) Error() string { return fmt.Sprintf("action %d: %v", e.index, e.err) }
func (e *indexError) Unwrap() error { return e.err }

func failedIndex(err error) int {
	var ie *indexError
	if errors.As(err, &ie) {
		return ie.index
	}
	return -1
}

// decodeStrict decodes a request message into v, refusing unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// messageID is the id of a message that did not decode, if it had one, so
// the client can match the error to its request.
func messageID(data []byte) uint64 {
	var idOnly struct {
		ID uint64 `json:"id"`
	}
	_ = json.Unmarshal(data, &idOnly)
	return idOnly.ID
}

func decodeRequest(data []byte) (request, error) {
	var raw wire.Request
	if err := decodeStrict(data, &raw); err != nil {
		var ae *actions.Error
		if errors.As(err, &ae) {
			return request{id: messageID(data)}, &indexError{ae.Index, ae.Err}
		}
		return request{id: messageID(data)}, fmt.Errorf("malformed request: %w", err)
	}
	req := request{id: raw.ID, op: raw.Op, view: raw.View}
	if raw.ID == 0 {
		return req, errors.New("request needs a non-zero id")
	}
	switch raw.Op {
	case wire.OpBatch:
		if len(raw.Actions) == 0 {
			return req, errors.New("batch has no actions")
		}
		req.actions, req.gate = raw.Actions, raw.Gate
	case wire.OpAction:
		switch {
		case raw.Action != nil && len(raw.Actions) > 0:
			return req, errors.New(`action request has both "action" and "actions"`)
		case raw.Action != nil:
			req.actions = []actions.Action{*raw.Action}
		case len(raw.Actions) > 0:
			req.actions = raw.Actions
		default:
			return req, errors.New(`action request has no "action" or "actions"`)
		}
	case wire.OpBrowser:
		if raw.Browser == nil || raw.Browser.Member == "" {
			return req, errors.New(`browser request has no "browser" call with a member`)
		}
		req.browser = raw.Browser
	case wire.OpScreenshot, wire.OpReleaseAll, wire.OpAwaitHandback:
	case wire.OpExec:
		d, err := codeexec.Deadline(raw.DeadlineMS)
		if err != nil {
			return req, err
		}
		req.code, req.timeout = raw.Code, d
	case wire.OpCancel, wire.OpGo:
		if raw.Target == 0 {
			return req, fmt.Errorf("%s needs a target id", raw.Op)
		}
		req.id, req.index = raw.Target, raw.Index
	default:
		return req, fmt.Errorf("unknown op %q", raw.Op)
	}
	return req, nil
}

// dispatch queues a request, or cancels the running one.
func (s *session) dispatch(ctx context.Context, req request) {
	if req.op == wire.OpGo {
		s.mu.Lock()
		if s.runningID == req.id {
			select {
			case s.gos <- req.index:
			default: // a second go for the same wait: the first one counts
			}
		}
		s.mu.Unlock()
		return
	}
	if req.op == wire.OpCancel {
		s.mu.Lock()
		if s.runningID == req.id && s.cancelRun != nil {
			s.cancelledB = true
			s.cancelRun()
		}
		s.mu.Unlock()
		return
	}
	select {
	case s.reqs <- req:
	default:
		s.replyError(ctx, req.id, wire.CodeBusy, fmt.Sprintf("more than %d requests queued", queueDepth), -1)
	}
}

func (s *session) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case req := <-s.reqs:
			s.handle(ctx, req)
		}
	}
}

// heartbeat pings the client; a client that does not answer within an
// interval is gone, and its session ends.
func (s *session) heartbeat(ctx context.Context, endSession context.CancelFunc) {
	interval := s.srv.cfg.HeartbeatInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, interval)
			err := s.conn.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				s.srv.cfg.Logf("session: heartbeat failed, ending session: %v", err)
				endSession()
				s.conn.CloseNow()
				return
			}
		}
	}
}

func (s *session) write(ctx context.Context, typ websocket.MessageType, p []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.srv.writeFrame(ctx, s.conn, typ, p)
}

func (s *session) replyError(ctx context.Context, id uint64, code, msg string, index int) {
	rep := wire.Reply{Op: wire.OpError, ID: id, Error: &wire.Error{Code: code, Message: msg, FailedIndex: index}}
	if err := s.write(ctx, websocket.MessageText, marshal(rep)); err != nil {
		s.srv.cfg.Logf("session: write error reply: %v", err)
	}
}

func identity(w, h int) scaling.Transform {
	return scaling.Transform{Screen: scaling.Size{W: w, H: h}, Crop: scaling.Rect{W: w, H: h}, Image: scaling.Size{W: w, H: h}}
}
