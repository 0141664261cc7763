package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
)

// lateLink is a connection to agentd whose bytes to the client can be held
// back: what agentd says (its lease events) reaches the client late, as on
// a loaded machine, but in order.
type lateLink struct {
	addr string

	mu      sync.Mutex
	gate    chan struct{} // closed: agentd's bytes flow
	opening bool          // the client's next bytes open the gate
}

func (l *lateLink) dial(ctx context.Context) (net.Conn, error) {
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp", l.addr)
	if err != nil {
		return nil, err
	}
	client, near := net.Pipe()
	// The pumps' owner is the connection: they end when either side closes.
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := near.Read(buf)
			if n > 0 {
				if _, err := up.Write(buf[:n]); err != nil {
					break
				}
				l.mu.Lock()
				if l.opening {
					l.opening = false
					close(l.gate)
				}
				l.mu.Unlock()
			}
			if err != nil {
				break
			}
		}
		up.Close()
		near.Close()
	}()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 {
				l.mu.Lock()
				gate := l.gate
				l.mu.Unlock()
				if gate != nil {
					<-gate
				}
				if _, err := near.Write(buf[:n]); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		up.Close()
		near.Close()
	}()
	return client, nil
}

// holdUntilClientSends holds agentd's bytes from now on until the client
// next sends something (and that reached agentd).
func (l *lateLink) holdUntilClientSends() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gate, l.opening = make(chan struct{}), true
}

// TestTakeoverToldLate: a person takes the desktop and hands it back while
// agentd's word of it is still on its way to the session, so the next call
// is sent as if nothing happened and agentd refuses it (the hand back is
// not collected). The call is answered as the first after the hand back:
// the person's note and a fresh screenshot, nothing of it run; not "held".
func TestTakeoverToldLate(t *testing.T) {
	addr, token, display := desktopAgentd(t)
	rec := xrecorder.Start(t, display)
	ctx := context.Background()
	link := &lateLink{addr: addr}
	c, err := guest.DialWith(ctx, addr, token, guest.DialOptions{Dial: link.dial})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, stop := rawSession(t, c, Config{})
	defer stop()
	call := func(actions string) (text string, isError bool) {
		t.Helper()
		line, err := rc.Call("tools/call", json.RawMessage(`{"name":"computer","arguments":{"actions":`+actions+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			Result struct {
				Content []struct{ Type, Text string }
				IsError bool
			}
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.Result.Content {
			text += c.Text
		}
		return text, resp.Result.IsError
	}
	if txt, isErr := call(`[{"type":"screenshot"}]`); isErr {
		t.Fatal(txt)
	}

	link.holdUntilClientSends()
	op, err := guest.Operate(ctx, addr, token)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if err := op.Take(ctx, "tester"); err != nil {
		t.Fatal(err)
	}
	if err := op.HandBack(ctx, "told late"); err != nil {
		t.Fatal(err)
	}
	rec.Sync(t)
	rec.Clear()
	txt, isErr := call(`[{"type":"click","button":"left","x":640,"y":400}]`)
	if isErr || !bytes.Contains([]byte(txt), []byte("handed it back")) || !bytes.Contains([]byte(txt), []byte("told late")) ||
		!bytes.Contains([]byte(txt), []byte("Nothing of this call ran")) {
		t.Fatalf("the call after a hand back the session heard of late: error %v, %q", isErr, txt)
	}
	rec.Sync(t)
	for _, e := range rec.Events() {
		if e.Kind == xrecorder.ButtonPress {
			t.Fatalf("the call chosen before the take over reached the desktop: %v", e)
		}
	}

	// The next call runs.
	if txt, isErr := call(`[{"type":"click","button":"left","x":640,"y":400}]`); isErr {
		t.Fatal(txt)
	}
	rec.Sync(t)
	presses := 0
	for _, e := range rec.Events() {
		if e.Kind == xrecorder.ButtonPress {
			presses++
		}
	}
	if presses != 1 {
		t.Fatalf("%d presses after the hand back was told, want 1", presses)
	}
}
