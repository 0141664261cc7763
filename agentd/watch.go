package agentd

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/scaling"
)

// conns counts and waits for the connections of one side role, the
// watchers (wire.WatchPath) or the operators (wire.OperatePath), at most
// max at a time. They never touch the controller slot: they and the
// controller are served side by side.
type conns struct {
	role string // "watchers", "operators": for the busy message
	max  int
	mu   sync.Mutex
	n    int
	wg   sync.WaitGroup
}

// enter counts conn in; when max are already in, it closes conn as busy
// and returns false, counting nothing.
func (c *conns) enter(conn *websocket.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		conn.Close(websocket.StatusTryAgainLater, fmt.Sprintf("busy: %d %s are connected", c.max, c.role))
		return false
	}
	c.n++
	c.wg.Add(1)
	return true
}

func (c *conns) leave() {
	c.mu.Lock()
	c.n--
	c.mu.Unlock()
	c.wg.Done()
}

// acceptSide upgrades r to a connection of the side role c speaking
// protocol, counts it in c and returns it with the context it is served
// in; end, deferred, cancels that context and counts the connection out.
// A nil conn: r was answered, or the connection closed (busy, say).
func (s *Server) acceptSide(w http.ResponseWriter, r *http.Request, c *conns, protocol, logPrefix string) (conn *websocket.Conn, ctx context.Context, end func()) {
	conn = s.upgrade(w, r, protocol, logPrefix)
	if conn == nil || !c.enter(conn) {
		return nil, nil, nil
	}
	ctx, cancel := s.connContext(r)
	return conn, ctx, func() {
		cancel()
		c.leave()
	}
}

// wait returns when every connection has ended, or ctx is done.
func (c *conns) wait(ctx context.Context) error { return waitGroup(ctx, &c.wg) }

// waitGroup waits for wg, or until ctx is done.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchOptions reads a watch request's query: the frame rate and the size
// frames fit within.
func watchOptions(r *http.Request) (fps, width, height int, err error) {
	q := r.URL.Query()
	num := func(name string, def, lo, hi int) (int, error) {
		s := q.Get(name)
		if s == "" {
			return def, nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return 0, fmt.Errorf("%s must be a whole number from %d to %d", name, lo, hi)
		}
		return v, nil
	}
	if fps, err = num("fps", wire.DefaultWatchFPS, 1, wire.MaxWatchFPS); err != nil {
		return
	}
	if width, err = num("width", 0, 1, 1<<14); err != nil {
		return
	}
	height, err = num("height", 0, 1, 1<<14)
	return
}

// serveWatch serves one watcher: frames of the screen when it changes, at
// most fps a second, and nothing else. Whatever the watcher sends ends it.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	fps, width, height, err := watchOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	conn, ctx, end := s.acceptSide(w, r, &s.watch, wire.WatchSubprotocol, "watch: ")
	if conn == nil {
		return
	}
	defer end()
	// The reader cancels: a watcher that sends or goes ends the frames.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The limit makes any message small; it is refused anyway.
	conn.SetReadLimit(1 << 10)

	if err := s.writeFrame(ctx, conn, websocket.MessageText, marshal(s.hello())); err != nil {
		conn.CloseNow()
		return
	}
	var readerDone sync.WaitGroup
	readerDone.Add(1)
	go func() {
		defer readerDone.Done()
		defer cancel()
		if _, _, err := conn.Read(ctx); err == nil {
			s.cfg.Logf("watch: a watcher sent a message; closing it")
			conn.Close(websocket.StatusPolicyViolation, "watchers receive frames only: input is refused")
		}
	}()
	s.watchLoop(ctx, conn, time.Second/time.Duration(fps), width, height)
	cancel()
	conn.CloseNow()
	readerDone.Wait()
}

// watchLoop sends a frame whenever the screen's hash has changed, checking
// once per interval. Writing is synchronous: ticks that pass while a frame
// is being written are dropped, so a slow watcher gets fewer frames, never
// a queue of old ones.
func (s *Server) watchLoop(ctx context.Context, conn *websocket.Conn, interval time.Duration, width, height int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var (
		png      bytes.Buffer
		seq      uint64
		last     uint64
		sent     bool
		lastSend = time.Now()
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		meta, changed, err := s.watchFrame(ctx, &png, width, height, &last, sent)
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.Logf("watch: frame: %v", err)
			}
			continue
		}
		if !changed {
			// A still screen sends nothing; a ping now and then finds a
			// watcher that has gone without closing.
			if time.Since(lastSend) >= s.cfg.HeartbeatInterval {
				pctx, cancel := context.WithTimeout(ctx, s.cfg.HeartbeatInterval)
				err := conn.Ping(pctx)
				cancel()
				if err != nil {
					return
				}
				lastSend = time.Now()
			}
			continue
		}
		seq++
		meta.Op, meta.Seq = wire.OpFrame, seq
		if err := s.writeFrame(ctx, conn, websocket.MessageText, marshal(meta)); err != nil {
			return
		}
		if err := s.writeFrame(ctx, conn, websocket.MessageBinary, png.Bytes()); err != nil {
			if ctx.Err() == nil {
				s.cfg.Logf("watch: %v", err)
			}
			return
		}
		sent, lastSend = true, time.Now()
	}
}

// watchFrame renders the screen into png if its hash differs from *last
// (or nothing was sent yet). An unchanged screen costs the hash alone.
func (s *Server) watchFrame(ctx context.Context, png *bytes.Buffer, width, height int, last *uint64, sent bool) (wire.WatchFrame, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	start := time.Now()
	h, err := s.cfg.Screen.FrameHash(ctx)
	if err != nil {
		return wire.WatchFrame{}, false, err
	}
	if sent && h == *last {
		return wire.WatchFrame{}, false, nil
	}
	img, err := s.cfg.Screen.Capture(ctx)
	if err != nil {
		return wire.WatchFrame{}, false, err
	}
	sw, sh := img.Rect.Dx(), img.Rect.Dy()
	tw, th := width, height
	if tw == 0 || th == 0 {
		tw, th = sw, sh
	}
	t, err := scaling.New(scaling.Size{W: sw, H: sh}, nil, min(tw, sw), min(th, sh), true)
	if err != nil {
		return wire.WatchFrame{}, false, fmt.Errorf("watch view: %w", err)
	}
	captured := time.Now()
	png.Reset()
	if err := s.cfg.Imager.Render(png, img, t); err != nil {
		return wire.WatchFrame{}, false, err
	}
	*last = h
	return wire.WatchFrame{Width: t.Image.W, Height: t.Image.H, Bytes: png.Len(),
		CaptureUS: captured.Sub(start).Microseconds(), EncodeUS: time.Since(captured).Microseconds()}, true, nil
}
