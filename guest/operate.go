package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/runner/computer"
)

var _ computer.Watched = (*Client)(nil)

// takeovers counts the take overs agentd told the session of.
type takeovers struct {
	mu   sync.Mutex
	n    uint64
	held bool          // as of the last lease event
	next chan struct{} // closed at the next take
}

func (t *takeovers) told(ev wire.LeaseEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = ev.Held
	if !ev.Held {
		return
	}
	t.n++
	if t.next != nil {
		close(t.next)
		t.next = nil
	}
}

// Takeovers counts the take overs of the desktop agentd told this session
// of (they come as they happen, whatever the session is doing), and
// returns a channel closed at the next one.
func (c *Client) Takeovers() (uint64, <-chan struct{}) {
	t := &c.takes
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next == nil {
		t.next = make(chan struct{})
	}
	return t.n, t.next
}

// Held reports whether a person holds the desktop, as of the last lease
// event agentd told this session of (a take over during this session
// only: agentd tells the session the lease was taken during).
func (c *Client) Held() bool {
	t := &c.takes
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held
}

// leaseEvent recognises agentd's lease event among the session's frames
// (its op comes first, as agentd writes it) without decoding the rest.
func leaseEvent(typ websocket.MessageType, data []byte) (wire.LeaseEvent, bool) {
	var ev wire.LeaseEvent
	if typ != websocket.MessageText || !bytes.HasPrefix(data, []byte(`{"op":"`+wire.OpLease+`"`)) {
		return ev, false
	}
	if err := json.Unmarshal(data, &ev); err != nil || ev.Op != wire.OpLease {
		return ev, false
	}
	return ev, true
}

// Is makes a refusal because a person holds the desktop match
// computer.ErrTakenOver.
func (e *Error) Is(target error) bool {
	return target == computer.ErrTakenOver && e.Code == wire.CodeTakenOver
}

// AwaitHandback waits until no person holds the desktop (agentd's operator
// role) and returns what people did since the last call.
func (c *Client) AwaitHandback(ctx context.Context) (computer.Handback, error) {
	rep, _, err := c.call(ctx, wire.Request{Op: wire.OpAwaitHandback}, nil)
	if err != nil {
		return computer.Handback{}, err
	}
	hb := rep.Handback
	if hb == nil {
		return computer.Handback{}, errors.New("guest: agentd answered the wait for the hand back without one")
	}
	return *hb, nil
}

// Operator is a connection in agentd's operator role: a person who takes
// the desktop over, drives it and hands it back. Calls are served one at a
// time, in order; they may be made from several goroutines.
type Operator struct {
	conn  *websocket.Conn
	hello wire.OperatorHello

	mu     sync.Mutex
	nextID uint64
	lease  wire.Lease
}

// Operate connects to agentd at addr as an operator. Connecting takes
// nothing: Take does.
func Operate(ctx context.Context, addr, token string) (*Operator, error) {
	return OperateWith(ctx, addr, token, DialOptions{})
}

// OperateWith is Operate with options.
func OperateWith(ctx context.Context, addr, token string, opts DialOptions) (*Operator, error) {
	if token == "" {
		return nil, errors.New("guest: a token is required")
	}
	u, hc := endpoint(addr, opts.Dial)
	u = strings.TrimSuffix(u, "/v1") + wire.OperatePath
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPClient:   hc,
		HTTPHeader:   map[string][]string{"Authorization": {"Bearer " + token}},
		Subprotocols: []string{wire.OperateSubprotocol},
	})
	if err != nil {
		return nil, fmt.Errorf("guest: operate %s: %w", addr, err)
	}
	conn.SetReadLimit(1 << 20)
	_, data, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		if websocket.CloseStatus(err) == websocket.StatusTryAgainLater {
			return nil, fmt.Errorf("guest: operate %s: busy: %d operators are connected", addr, wire.MaxOperators)
		}
		return nil, fmt.Errorf("guest: operate %s: reading hello: %w", addr, err)
	}
	var hello wire.OperatorHello
	if err := json.Unmarshal(data, &hello); err != nil || hello.Op != wire.OpHello {
		conn.CloseNow()
		return nil, fmt.Errorf("guest: %s did not say hello", addr)
	}
	if hello.Version != wire.Version {
		conn.CloseNow()
		return nil, fmt.Errorf("guest: %s speaks protocol %d, this client %d", addr, hello.Version, wire.Version)
	}
	return &Operator{conn: conn, hello: hello, lease: hello.Lease}, nil
}

// Hello is what agentd announced: the screen size and the lease.
func (o *Operator) Hello() wire.OperatorHello { return o.hello }

// Lease is the lease as of the last reply.
func (o *Operator) Lease() wire.Lease {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lease
}

// Take takes the desktop over; by names who, for the record.
func (o *Operator) Take(ctx context.Context, by string) error {
	_, err := o.call(ctx, wire.OperatorRequest{Op: wire.OpTake, By: by})
	return err
}

// Input performs one action, in screen pixels, while this connection
// holds the desktop.
func (o *Operator) Input(ctx context.Context, a actions.Action) (wire.ActionResult, error) {
	rep, err := o.call(ctx, wire.OperatorRequest{Op: wire.OpInput, Action: &a})
	if rep.Result != nil {
		return *rep.Result, err
	}
	return wire.ActionResult{}, err
}

// HandBack ends the take over, with an optional note for the model.
func (o *Operator) HandBack(ctx context.Context, note string) error {
	_, err := o.call(ctx, wire.OperatorRequest{Op: wire.OpHandBack, Note: note})
	return err
}

// Close ends the connection; a lease it holds stays held (orphaned).
func (o *Operator) Close() error {
	return o.conn.Close(websocket.StatusNormalClosure, "")
}

func (o *Operator) call(ctx context.Context, req wire.OperatorRequest) (wire.OperatorReply, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nextID++
	req.ID = o.nextID
	data, err := json.Marshal(req)
	if err != nil {
		return wire.OperatorReply{}, fmt.Errorf("guest: encode request: %w", err)
	}
	if err := o.conn.Write(ctx, websocket.MessageText, data); err != nil {
		return wire.OperatorReply{}, fmt.Errorf("guest: operate: %w", err)
	}
	for {
		_, data, err := o.conn.Read(ctx)
		if err != nil {
			return wire.OperatorReply{}, fmt.Errorf("guest: operate: %w", err)
		}
		var rep wire.OperatorReply
		if err := json.Unmarshal(data, &rep); err != nil {
			return wire.OperatorReply{}, fmt.Errorf("guest: operate: malformed reply from agentd: %w", err)
		}
		if rep.ID != req.ID {
			continue // the answer to a call abandoned earlier
		}
		o.lease = rep.Lease
		if rep.Op == wire.OpError {
			if rep.Error == nil {
				return rep, errors.New("guest: operate: agentd sent an error without a reason")
			}
			return rep, &Error{Code: rep.Error.Code, Message: rep.Error.Message, FailedIndex: rep.Error.FailedIndex}
		}
		return rep, nil
	}
}
