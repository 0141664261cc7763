package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions/wire"
)

// WatchOptions choose a watcher's frames; zero values take agentd's
// defaults (wire.DefaultWatchFPS, the screen's own size).
type WatchOptions struct {
	FPS           int
	Width, Height int
	// Dial, if set, makes the connection (as in DialOptions).
	Dial DialFunc
}

// Watcher receives frames of a guest's screen through agentd's watch role:
// it can never send input, and it does not take the controller slot.
type Watcher struct {
	conn  *websocket.Conn
	hello wire.Hello
}

// Frame is one frame of the screen: what agentd said of it and its PNG.
type Frame struct {
	wire.WatchFrame
	PNG []byte
}

// Watch connects to agentd at addr as a watcher.
func Watch(ctx context.Context, addr, token string, opts WatchOptions) (*Watcher, error) {
	if token == "" {
		return nil, errors.New("guest: a token is required")
	}
	u, hc := endpoint(addr, opts.Dial)
	u = strings.TrimSuffix(u, "/v1") + wire.WatchPath
	q := url.Values{}
	if opts.FPS > 0 {
		q.Set("fps", strconv.Itoa(opts.FPS))
	}
	if opts.Width > 0 && opts.Height > 0 {
		q.Set("width", strconv.Itoa(opts.Width))
		q.Set("height", strconv.Itoa(opts.Height))
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	conn, hello, err := handshake(ctx, ctx, "watch", addr, u, hc, token, wire.WatchSubprotocol,
		fmt.Sprintf("has as many watchers as it serves (%d)", wire.MaxWatchers))
	if err != nil {
		return nil, err
	}
	return &Watcher{conn: conn, hello: hello}, nil
}

// Hello is what agentd announced (the screen size).
func (w *Watcher) Hello() wire.Hello { return w.hello }

// Next waits for the next frame. Only one goroutine may call it.
func (w *Watcher) Next(ctx context.Context) (Frame, error) {
	typ, data, err := w.conn.Read(ctx)
	if err != nil {
		return Frame{}, fmt.Errorf("guest: watch: %w", err)
	}
	var f Frame
	if typ != websocket.MessageText || json.Unmarshal(data, &f.WatchFrame) != nil || f.Op != wire.OpFrame {
		return Frame{}, errors.New("guest: watch: expected a frame description")
	}
	typ, f.PNG, err = w.conn.Read(ctx)
	if err != nil {
		return Frame{}, fmt.Errorf("guest: watch: %w", err)
	}
	if typ != websocket.MessageBinary || len(f.PNG) != f.Bytes {
		return Frame{}, fmt.Errorf("guest: watch: frame %d: expected %d bytes of PNG", f.Seq, f.Bytes)
	}
	return f, nil
}

// Close ends the watch.
func (w *Watcher) Close() error { return w.conn.Close(websocket.StatusNormalClosure, "") }
