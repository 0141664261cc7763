// Package agentd is the guest daemon's server: an authenticated websocket
// through which one controller at a time performs computer actions and takes
// screenshots, watchers that only receive frames (watch.go), and a /healthz
// probe.
//
// Concurrency rules:
//   - A Server accepts any number of HTTP requests, but at most one websocket
//     session (the controller) at a time; another gets a "busy" close.
//   - A session has two goroutines: its reader (owned by the HTTP handler) and
//     one worker that runs requests in order. Writes are serialised by a mutex.
//   - When a session ends, for whatever reason, the running request is
//     cancelled and every key and button is released before the next
//     controller is admitted.
package agentd

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/codeexec"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/internal/defaults"
	"github.com/agentd-dev/agentd/scaling"
)

// Screen is the display as agentd reads it.
type Screen interface {
	// Size is the screen size in pixels.
	Size() (w, h int)
	// Capture returns the whole screen; the image is valid until the next call.
	Capture(ctx context.Context) (*image.RGBA, error)
	// FrameHash returns a hash of the current screen contents.
	FrameHash(ctx context.Context) (uint64, error)
}

// Imager turns a captured screen into the PNG the client asked for.
type Imager interface {
	// Render crops and scales src per t and writes it as PNG to w.
	Render(w io.Writer, src *image.RGBA, t scaling.Transform) error
}

// Executor performs actions in screen coordinates. A client sees of its
// errors only what they offer as safe to show (a Public method, as
// executor.Error has); the rest goes to the log.
type Executor interface {
	Do(ctx context.Context, a actions.Action) (executor.Result, error)
	ReleaseAll() error
}

var _ Executor = (*executor.Executor)(nil)

// Holder presses and releases single keys and buttons that stay down across
// actions: the display's input device, for the code's keyDown and
// mouseDown.
type Holder interface {
	KeyDown(k actions.Key) error
	KeyUp(k actions.Key) error
	ButtonDown(b actions.Button) error
	ButtonUp(b actions.Button) error
}

// Config configures a Server. Token, Screen, Imager and Exec are required.
type Config struct {
	// Token is the secret every request must carry as "Authorization: Bearer".
	Token []byte
	// Screen, Imager and Exec are the display, the image pipeline and input.
	Screen Screen
	Imager Imager
	Exec   Executor
	// RequestTimeout bounds one request (a whole batch); default 2 minutes,
	// enough to type MaxTextLen characters.
	RequestTimeout time.Duration
	// WriteTimeout bounds one message write, so a client that stops reading
	// is dropped instead of blocking the daemon; default 10s.
	WriteTimeout time.Duration
	// HeartbeatInterval is how often the server pings an idle session; a
	// missing pong within the interval ends it. Default 15s.
	HeartbeatInterval time.Duration
	// InputCheck, if set, proves the input connection for /healthz (a
	// round trip to the display it drives); with Screen's capture it makes
	// health red while the X server is gone, and green again once both
	// have reconnected.
	InputCheck func(ctx context.Context) error
	// Code, if set, serves exec requests (agentd --code): a Python worker
	// per session. Without it exec is refused as unavailable. Its input
	// goes through Exec and Hold (required with Code) behind the same
	// lease check as the controller's.
	Code *codeexec.Service
	Hold Holder
	// Browser, if set, serves the browser op family (agentd --browser).
	Browser Browser
	// Capabilities are announced in Hello.
	Capabilities []string
	// Logf logs operational messages; never secrets, typed text or images.
	Logf func(format string, args ...any)
}

// Server serves agentd's HTTP endpoints.
type Server struct {
	cfg Config
	mux *http.ServeMux

	// base ends every session when the server shuts down.
	base    context.Context
	stopAll context.CancelFunc

	// screenMu spans a capture and its rendering: the captured image is a
	// buffer the Screen reuses, and /healthz captures from other goroutines.
	screenMu sync.Mutex

	watch conns

	// ops and lease are the operator role (operate.go, lease.go); inputMu
	// serialises the lease check with the input it allows.
	ops     conns
	lease   lease
	inputMu sync.Mutex
	// runs are the execs in progress, which a take over stops (code.go).
	runs codeRuns

	mu      sync.Mutex
	active  bool          // a controller holds the session
	idle    chan struct{} // closed when the active session has fully ended
	closing bool
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if len(cfg.Token) < 16 {
		return nil, errors.New("agentd: a token of at least 16 bytes is required")
	}
	if cfg.Screen == nil || cfg.Imager == nil || cfg.Exec == nil {
		return nil, errors.New("agentd: Screen, Imager and Exec are required")
	}
	if cfg.Code != nil && cfg.Hold == nil {
		return nil, errors.New("agentd: Hold is required with Code")
	}
	defaults.Positive(&cfg.RequestTimeout, 2*time.Minute)
	defaults.Positive(&cfg.WriteTimeout, 10*time.Second)
	defaults.Positive(&cfg.HeartbeatInterval, 15*time.Second)
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), idle: closedChan()}
	s.watch.role, s.watch.max = "watchers", wire.MaxWatchers
	s.ops.role, s.ops.max = "operators", wire.MaxOperators
	s.base, s.stopAll = context.WithCancel(context.Background())
	s.mux.HandleFunc("/healthz", s.serveHealth)
	s.mux.HandleFunc("/v1", s.serveSession)
	s.mux.HandleFunc(wire.WatchPath, s.serveWatch)
	s.mux.HandleFunc(wire.OperatePath, s.serveOperate)
	return s, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Shutdown refuses new sessions, ends the active one (cancelling what it
// runs and releasing every input) and waits for it to finish.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAll()
	s.mu.Lock()
	s.closing = true
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		if err := s.watch.wait(ctx); err != nil {
			return err
		}
		return s.ops.wait(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serveHealth proves the display and input chain: a capture must succeed,
// and the input connection must answer. Both reconnect on their own after
// the X server comes back, so a red health turns green without a restart.
// It reveals nothing but ok or not: the probe needs no token.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	s.screenMu.Lock()
	_, err := s.cfg.Screen.FrameHash(ctx)
	s.screenMu.Unlock()
	if err == nil && s.cfg.InputCheck != nil {
		if ierr := s.cfg.InputCheck(ctx); ierr != nil {
			err = fmt.Errorf("input: %w", ierr)
		}
	}
	if err != nil {
		s.cfg.Logf("healthz: display check failed: %v", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"ok":false}`+"\n")
		return
	}
	_, _ = io.WriteString(w, `{"ok":true}`+"\n")
}

// authorized checks everything that must hold before the websocket
// upgrade; when something does not, it answers r with why (and logs it).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if code, msg := s.authorize(r); code != 0 {
		s.cfg.Logf("refused %s from %s: %s", r.URL.Path, r.RemoteAddr, msg)
		http.Error(w, msg, code)
		return false
	}
	return true
}

// authorize is authorized's check: the status and message of a refusal,
// or 0. The token comparison runs in constant time.
func (s *Server) authorize(r *http.Request) (int, string) {
	if r.Header.Get("Origin") != "" || r.Header.Get("Referer") != "" {
		return http.StatusForbidden, "browser-origin requests are refused"
	}
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if !strings.HasPrefix(auth, prefix) {
		return http.StatusUnauthorized, "missing token: send Authorization: Bearer <token>"
	}
	given := []byte(strings.TrimPrefix(auth, prefix))
	// ConstantTimeCompare returns early on a length mismatch; comparing
	// fixed-size digests keeps the time independent of the given length too.
	if subtle.ConstantTimeCompare(digest(given), digest(s.cfg.Token)) != 1 {
		return http.StatusUnauthorized, "wrong token"
	}
	return 0, ""
}

// upgrade upgrades an authorized r to a WebSocket connection speaking
// protocol. Origin is already refused by authorize, so nothing browser-like
// gets here and the origin check stays on. On a failure it has answered r
// or closed the connection, logged with logPrefix, and returns nil.
func (s *Server) upgrade(w http.ResponseWriter, r *http.Request, protocol, logPrefix string) *websocket.Conn {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol}})
	if err != nil {
		s.cfg.Logf("%swebsocket upgrade failed: %v", logPrefix, err)
		return nil
	}
	if conn.Subprotocol() != protocol {
		conn.Close(websocket.StatusPolicyViolation, "unsupported protocol: want "+protocol)
		return nil
	}
	return conn
}

// hello is the first message of every connection: the protocol's version
// and the screen's size.
func (s *Server) hello() wire.Hello {
	w, h := s.cfg.Screen.Size()
	return wire.Hello{Op: wire.OpHello, Version: wire.Version, Screen: scaling.Size{W: w, H: h}}
}

// connContext is the context of a connection's requests: it ends with the
// request or when the server shuts down (s.base). cancel releases it.
func (s *Server) connContext(r *http.Request) (ctx context.Context, cancel func()) {
	ctx, cancelCtx := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.base, cancelCtx)
	return ctx, func() {
		stop()
		cancelCtx()
	}
}

// handoverWait is how long a new controller waits for the previous one's
// session to finish ending before it is told "busy".
const handoverWait = time.Second

func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	conn := s.upgrade(w, r, wire.Subprotocol, "")
	if conn == nil {
		return
	}
	conn.SetReadLimit(wire.MaxRequestBytes)

	s.mu.Lock()
	if s.active && !s.closing {
		// A controller that has just closed its connection may still be
		// releasing what it held: a new one waits briefly for the handover
		// instead of getting "busy" from a client that is already gone.
		idle := s.idle
		s.mu.Unlock()
		t := time.NewTimer(handoverWait)
		select {
		case <-idle:
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
		s.mu.Lock()
	}
	if s.closing {
		s.mu.Unlock()
		conn.Close(websocket.StatusGoingAway, "agentd is shutting down")
		return
	}
	if s.active {
		s.mu.Unlock()
		conn.Close(websocket.StatusTryAgainLater, "busy: another controller is connected")
		return
	}
	s.active = true
	done := make(chan struct{})
	s.idle = done
	s.mu.Unlock()

	defer func() {
		s.mu.Lock()
		s.active = false
		close(done)
		s.mu.Unlock()
	}()
	ctx, cancel := s.connContext(r)
	defer cancel()
	newSession(s, conn).run(ctx)
}

// writeFrame writes one frame, bounded by the write timeout. A write that
// times out closes the connection (coder/websocket does), which ends the
// session: a client that stops reading cannot hold the controller slot.
func (s *Server) writeFrame(ctx context.Context, conn *websocket.Conn, typ websocket.MessageType, p []byte) error {
	wctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	err := conn.Write(wctx, typ, p)
	// Session contexts have no deadline: a deadline error is the write's.
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the client stopped reading (a write did not finish within %s), closing: %w", s.cfg.WriteTimeout, err)
	}
	return err
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own wire types are marshalled; failing here is a bug.
		panic(fmt.Sprintf("agentd: marshal %T: %v", v, err))
	}
	return b
}
