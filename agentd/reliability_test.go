package agentd

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/scaling"
)

// logBuf keeps what the daemon logs, for tests of what an operator sees.
type logBuf struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, msg)
	l.mu.Unlock()
	l.t.Log(msg)
}

func (l *logBuf) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// bigImager renders every screenshot as 4 MiB, so a client that does not
// read fills the socket buffers within a few replies.
type bigImager struct{ buf []byte }

func (b bigImager) Render(w io.Writer, _ *image.RGBA, _ scaling.Transform) error {
	_, err := w.Write(b.buf)
	return err
}

// TestStalledReaderIsDropped: a controller asks for screenshots and stops
// reading. The daemon's write stalls, times out, and the session ends with
// a log line that says why; the next controller is served.
func TestStalledReaderIsDropped(t *testing.T) {
	logs := &logBuf{t: t}
	f := newFixture(t, func(c *Config) {
		c.Imager = bigImager{buf: make([]byte, 4<<20)}
		c.WriteTimeout = 300 * time.Millisecond
		c.Logf = logs.logf
	})
	conn := rawConn(t, f)
	for id := 1; id <= queueDepth; id++ { // 64 MiB of replies, more than any socket buffers
		req := fmt.Sprintf(`{"id":%d,"op":"screenshot"}`, id)
		if err := conn.Write(ctx5(t), websocket.MessageText, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	c := f.dialEventually(t)
	if _, err := c.Screenshot(ctx5(t)); err != nil {
		t.Fatalf("the next controller: %v", err)
	}
	if !strings.Contains(logs.text(), "the client stopped reading") {
		t.Fatalf("the log does not say why the session ended:\n%s", logs.text())
	}
	// The stalled client, reading at last, finds its connection closed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	for err == nil {
		_, _, err = conn.Read(ctx)
	}
	if ctx.Err() != nil {
		t.Fatalf("the stalled connection was never closed: %v", err)
	}
	resp, err := http.Get(f.http.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health after the stalled client: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestHealthRedWhenInputIsDown: a display that still captures but whose
// input connection fails is not healthy.
func TestHealthRedWhenInputIsDown(t *testing.T) {
	var inputDown atomic.Bool
	f := newFixture(t, func(c *Config) {
		c.InputCheck = func(context.Context) error {
			if inputDown.Load() {
				return errors.New("X display lost")
			}
			return nil
		}
	})
	get := func() int {
		resp, err := http.Get(f.http.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("healthy: %d", code)
	}
	inputDown.Store(true)
	if code := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("input down: %d, want 503", code)
	}
}
