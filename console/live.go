package console

import (
	"context"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/guest"
)

// liveFPS and liveSize are what the page's live view asks agentd for.
const (
	liveFPS               = 15
	liveWidth, liveHeight = 1280, 800
	// liveWriteTimeout drops a page that stops reading.
	liveWriteTimeout = 5 * time.Second
)

// acceptRelay accepts a page's websocket for a relay named name. The
// relay's context ends when the request does or the console closes; Close
// waits for done. A nil conn means the upgrade failed (logged).
func (s *Server) acceptRelay(w http.ResponseWriter, r *http.Request, name string) (*websocket.Conn, context.Context, func()) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.cfg.Logf("console: %s: %v", name, err)
		return nil, nil, nil
	}
	s.relays.Add(1)
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.live, cancel)
	return conn, ctx, func() {
		stop()
		cancel()
		s.relays.Done()
	}
}

// serveLive relays agentd's watch frames to the page, each as one binary
// message holding the PNG. The relay keeps only the newest frame: a page
// that reads slowly skips frames instead of falling behind. The page
// cannot send anything through it: the relay never reads a message from
// the page, and agentd's watch role refuses input anyway.
func (s *Server) serveLive(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Guest == nil {
		http.Error(w, "this console has no guest to watch", http.StatusNotFound)
		return
	}
	// The Origin was checked by secure; the library checks it again.
	conn, ctx, done := s.acceptRelay(w, r, "live")
	if conn == nil {
		return
	}
	defer done()
	// CloseRead ends ctx when the page goes away and closes the page's
	// connection if it sends a data message.
	ctx, cancel := context.WithCancel(conn.CloseRead(ctx))
	defer cancel()

	g := s.cfg.Guest
	watcher, err := guest.Watch(ctx, g.Addr, g.Token, guest.WatchOptions{FPS: liveFPS, Width: liveWidth, Height: liveHeight, Dial: g.Dial})
	if err != nil {
		s.cfg.Logf("console: live: %v", err)
		conn.Close(websocket.StatusTryAgainLater, "the guest cannot be watched now")
		return
	}
	defer watcher.Close()

	latest := make(chan []byte, 1)
	reading := make(chan struct{})
	defer func() { <-reading }()
	defer cancel()
	go func() {
		defer close(reading)
		defer cancel()
		for {
			f, err := watcher.Next(ctx)
			if err != nil {
				return
			}
			select { // replace a frame the page has not taken yet
			case <-latest:
			default:
			}
			latest <- f.PNG
		}
	}()
	for {
		select {
		case <-ctx.Done():
			conn.Close(websocket.StatusGoingAway, "the live view ended")
			return
		case png := <-latest:
			wctx, wcancel := context.WithTimeout(ctx, liveWriteTimeout)
			err := conn.Write(wctx, websocket.MessageBinary, png)
			wcancel()
			if err != nil {
				return
			}
		}
	}
}
