package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/scaling"
)

// takeoverBy names the console's person in agentd's lease and the record.
const takeoverBy = "a person in the console"

// pageMessage is what the page sends on /takeover: take, input (an action
// as the computer tool writes it, in pixels of a frame of the given size
// over the whole screen: the page sends the screen's own size, so its
// points are screen pixels) or hand_back (with an optional note).
type pageMessage struct {
	Op     string          `json:"op"`
	Action json.RawMessage `json:"action,omitempty"`
	FrameW int             `json:"frame_w,omitempty"`
	FrameH int             `json:"frame_h,omitempty"`
	Note   string          `json:"note,omitempty"`
}

// pageState is what the console tells the page after each message.
type pageState struct {
	Lease wire.Lease `json:"lease"`
	// Screen is the desktop's size: the page maps the pointer to its pixels.
	Screen scaling.Size `json:"screen"`
	Error  string       `json:"error,omitempty"`
}

// serveTakeover relays a signed-in page's take over, input and hand back
// to agentd's operator role, one connection to agentd per page
// connection. agentd enforces the lease (the model's requests are refused
// while it is held); this relay only checks and maps what the page sends.
// When the page goes away, the relay's connection to agentd ends: a lease
// it holds stays held (orphaned) and the run stays paused until a page
// takes it again and hands it back (fail safe).
func (s *Server) serveTakeover(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Guest == nil {
		http.Error(w, "this console has no guest to take over", http.StatusNotFound)
		return
	}
	// secure checked the cookie and any Origin; taking the desktop needs
	// the console's own page, so the Origin must be there.
	if r.Header.Get("Origin") != "http://"+s.host {
		s.refuse(w, r, http.StatusForbidden, "taking over must come from the console's own page")
		return
	}
	conn, ctx, done := s.acceptRelay(w, r, "takeover")
	if conn == nil {
		return
	}
	defer done()
	conn.SetReadLimit(64 << 10)

	g := s.cfg.Guest
	op, err := guest.OperateWith(ctx, g.Addr, g.Token, guest.DialOptions{Dial: g.Dial})
	if err != nil {
		s.cfg.Logf("console: takeover: %v", err)
		conn.Close(websocket.StatusTryAgainLater, "the guest cannot be taken over now")
		return
	}
	defer op.Close()
	screen := op.Hello().Screen
	send := func(st pageState) error {
		b, _ := json.Marshal(st)
		return conn.Write(ctx, websocket.MessageText, b)
	}
	if send(pageState{Lease: op.Lease(), Screen: screen}) != nil {
		return
	}
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			conn.Close(websocket.StatusNormalClosure, "")
			return
		}
		var m pageMessage
		var why error
		if typ != websocket.MessageText || json.Unmarshal(data, &m) != nil {
			why = errors.New("the page sent something that is not a take over message")
		} else {
			why = s.relay(ctx, op, m, screen.W, screen.H)
		}
		st := pageState{Lease: op.Lease(), Screen: screen}
		if why != nil {
			st.Error = why.Error()
		}
		if send(st) != nil {
			return
		}
	}
}

// relay passes one page message on to agentd.
func (s *Server) relay(ctx context.Context, op *guest.Operator, m pageMessage, screenW, screenH int) error {
	switch m.Op {
	case "take":
		return op.Take(ctx, takeoverBy)
	case "hand_back":
		if len(m.Note) > wire.MaxNoteLen || !utf8.ValidString(m.Note) {
			return fmt.Errorf("the note is longer than %d bytes", wire.MaxNoteLen)
		}
		return op.HandBack(ctx, m.Note)
	case "input":
		a, err := actions.Decode(m.Action)
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		if m.FrameW <= 0 || m.FrameH <= 0 {
			return errors.New("input: the frame size is missing")
		}
		a = toScreen(a, m.FrameW, m.FrameH, screenW, screenH)
		_, err = op.Input(ctx, a)
		return err
	}
	return fmt.Errorf("unknown op %q", m.Op)
}

// toScreen maps an action from the live view's frame (the whole screen
// fitted, aspect kept) to screen pixels; agentd refuses points off the
// screen.
func toScreen(a actions.Action, fw, fh, sw, sh int) actions.Action {
	pts := a.Points()
	for i, p := range pts {
		pts[i] = actions.Point{X: p.X * sw / fw, Y: p.Y * sh / fh}
	}
	if len(pts) > 0 {
		a = a.WithPoints(pts)
	}
	a.ScrollX, a.ScrollY = a.ScrollX*sw/fw, a.ScrollY*sh/fh
	return a
}
