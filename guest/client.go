// Package guest is the host's client of agentd: a driver that performs
// computer actions on one guest desktop and fetches screenshots.
//
// Concurrency rules: a Client runs one request at a time; a call made while
// another is in flight fails at once with ErrBusy (never queued). Every call
// takes a context; cancelling it asks agentd to stop the running request and
// waits, bounded, for agentd's answer so the result says what ran.
//
// A Client never reconnects and never replays an action: after the
// connection drops, every call fails with an error that says which action
// may have been in flight.
package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/internal/dialaddr"
)

// ErrBusy is returned when a call is made while another is in flight.
var ErrBusy = errors.New("guest: busy: another call is in flight")

// ErrClosed is returned after Close or after the connection was lost.
var ErrClosed = errors.New("guest: connection closed")

// cancelGrace bounds how long a cancelled call waits for agentd to confirm
// what ran before giving up on the answer.
const cancelGrace = 5 * time.Second

// Error is a request agentd refused or could not finish.
type Error struct {
	Code    string // one of wire.Code*
	Message string
	// FailedIndex is the action that failed, or -1.
	FailedIndex int
	// Results are the actions that ran before the failure, in order.
	Results []wire.ActionResult
}

func (e *Error) Error() string { return fmt.Sprintf("agentd: %s: %s", e.Code, e.Message) }

// ConnectionLostError says the connection ended while a request was in
// flight: the actions listed in Completed ran; InFlight (if ≥ 0) may or may
// not have run. Check the desktop before retrying anything.
type ConnectionLostError struct {
	Completed []wire.ActionResult
	InFlight  int
	Err       error
}

func (e *ConnectionLostError) Error() string {
	msg := fmt.Sprintf("guest: connection lost after %d completed action(s)", len(e.Completed))
	if e.InFlight >= 0 {
		msg += fmt.Sprintf("; action %d may or may not have run", e.InFlight)
	}
	return msg + ": " + e.Err.Error()
}

func (e *ConnectionLostError) Unwrap() error { return ErrClosed }

// Client is a connection to one agentd.
type Client struct {
	conn    *websocket.Conn
	hello   wire.Hello
	endConn context.CancelFunc // ends the connection's own context

	busy   atomic.Bool
	nextID atomic.Uint64

	// inbox carries server messages from the reader goroutine to the call in
	// flight; it is closed when the reader ends.
	inbox     chan frame
	readerErr error // set before inbox is closed
	done      chan struct{}

	viewMu sync.Mutex
	view   *wire.View // sent with the next screenshot, then nil
	closed atomic.Bool

	// takes is what agentd told of people's take overs (operate.go).
	takes takeovers
}

type frame struct {
	typ  websocket.MessageType
	data []byte
}

// DialFunc makes a connection to one agentd; the client speaks HTTP and
// websockets over it. backend.Dialer gives an Instance's.
type DialFunc = func(ctx context.Context) (net.Conn, error)

// DialOptions tune Dial.
type DialOptions struct {
	// Dial, if set, makes the connection (a backend's tunnel or
	// port-forward); addr then only names the guest in errors.
	Dial DialFunc
}

// Dial connects to agentd at addr: "host:port", "ws://host:port", or
// "unix:/path/to/agentd.sock". The token is sent as a bearer token.
func Dial(ctx context.Context, addr, token string) (*Client, error) {
	return DialWith(ctx, addr, token, DialOptions{})
}

// DialWith is Dial with options.
func DialWith(ctx context.Context, addr, token string, opts DialOptions) (*Client, error) {
	if token == "" {
		return nil, errors.New("guest: a token is required")
	}
	url, hc := endpoint(addr, opts.Dial)
	// net/http ties a 101 response's connection to the request's context, so
	// the connection gets a context of its own that lives until Close; ctx
	// bounds only the handshake.
	connCtx, endConn := context.WithCancel(context.WithoutCancel(ctx))
	stopBound := context.AfterFunc(ctx, endConn)
	c, err := dial(ctx, connCtx, addr, url, hc, token)
	if !stopBound() || err != nil {
		endConn()
		if err == nil {
			c.conn.CloseNow()
			err = fmt.Errorf("guest: dial %s: %w", addr, ctx.Err())
		}
		return nil, err
	}
	c.endConn = endConn
	go c.readLoop()
	return c, nil
}

func dial(ctx, connCtx context.Context, addr, url string, hc *http.Client, token string) (*Client, error) {
	conn, hello, err := handshake(ctx, connCtx, "dial", addr, url, hc, token, wire.Subprotocol,
		"is busy: another controller is connected")
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, hello: hello, inbox: make(chan frame, 64), done: make(chan struct{})}, nil
}

// handshake opens a websocket on url speaking subprotocol and reads
// agentd's hello, which must be of this client's protocol version. The
// connection lives in connCtx; ctx bounds the wait for the hello. verb
// names the attempt in errors; busy says what it means that agentd turned
// the connection away because it serves as many as it can.
func handshake(ctx, connCtx context.Context, verb, addr, url string, hc *http.Client, token, subprotocol, busy string) (*websocket.Conn, wire.Hello, error) {
	conn, resp, err := websocket.Dial(connCtx, url, &websocket.DialOptions{
		HTTPClient:   hc,
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + token}},
		Subprotocols: []string{subprotocol},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, wire.Hello{}, fmt.Errorf("guest: %s %s: refused with HTTP %d (%s)", verb, addr, resp.StatusCode, refusal(resp.StatusCode))
		}
		return nil, wire.Hello{}, fmt.Errorf("guest: %s %s: %w", verb, addr, err)
	}
	conn.SetReadLimit(wire.MaxReplyBytes)
	_, data, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		if websocket.CloseStatus(err) == websocket.StatusTryAgainLater {
			return nil, wire.Hello{}, fmt.Errorf("guest: %s %s", addr, busy)
		}
		return nil, wire.Hello{}, fmt.Errorf("guest: reading hello from %s: %w", addr, err)
	}
	var hello wire.Hello
	if err := json.Unmarshal(data, &hello); err != nil || hello.Op != wire.OpHello {
		conn.CloseNow()
		return nil, wire.Hello{}, fmt.Errorf("guest: %s did not say hello", addr)
	}
	if hello.Version != wire.Version {
		conn.CloseNow()
		return nil, wire.Hello{}, fmt.Errorf("guest: %s speaks protocol %d, this client %d", addr, hello.Version, wire.Version)
	}
	return conn, hello, nil
}

func refusal(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return "missing or wrong token"
	case http.StatusForbidden:
		return "forbidden"
	}
	return http.StatusText(code)
}

// endpoint returns the URL of agentd's /v1 at addr and the HTTP client
// that reaches it: over dial when set (or for a unix socket), else the
// default client to addr's host.
func endpoint(addr string, dial DialFunc) (string, *http.Client) {
	if dial == nil && strings.HasPrefix(addr, "unix:") {
		dial = dialaddr.Func(addr)
	}
	if dial != nil {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }}
		return "ws://agentd/v1", &http.Client{Transport: tr}
	}
	if !strings.Contains(addr, "://") {
		addr = "ws://" + addr
	}
	return strings.TrimSuffix(addr, "/") + "/v1", nil
}

// readLoop owns reading: it forwards every server message to inbox until
// the connection ends. It exits when the connection is closed.
func (c *Client) readLoop() {
	defer close(c.done)
	defer close(c.inbox)
	for {
		typ, data, err := c.conn.Read(context.Background())
		if err != nil {
			c.readerErr = err
			return
		}
		if ev, ok := leaseEvent(typ, data); ok {
			// Unasked, and wanted while no call reads the inbox.
			c.takes.told(ev)
			continue
		}
		c.inbox <- frame{typ, data}
	}
}

// Hello is what agentd announced: protocol version, screen size, capabilities.
func (c *Client) Hello() wire.Hello { return c.hello }

// SetView sets the crop and output size used from the next Screenshot on.
// Action coordinates are read in the image space of the latest screenshot.
func (c *Client) SetView(v wire.View) {
	c.viewMu.Lock()
	c.view = &v
	c.viewMu.Unlock()
}

// Close ends the session; agentd releases every key and button.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	err := c.conn.Close(websocket.StatusNormalClosure, "bye")
	<-c.done
	c.endConn()
	if err != nil && !errors.Is(err, net.ErrClosed) && websocket.CloseStatus(err) == -1 {
		return fmt.Errorf("guest: close: %w", err)
	}
	return nil
}
