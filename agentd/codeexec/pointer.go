package codeexec

import (
	"context"
	"fmt"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// XPointer reads the pointer's position on an X display over a connection
// of its own (pure Go), reconnecting after the display comes back.
type XPointer struct {
	display string

	mu   sync.Mutex
	conn *xgb.Conn
	root xproto.Window
}

// NewXPointer returns an XPointer for display; it connects at first use.
func NewXPointer(display string) *XPointer {
	return &XPointer{display: display}
}

// Position returns the pointer's screen position.
func (p *XPointer) Position(ctx context.Context) (int, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	if p.conn == nil {
		c, err := xgb.NewConnDisplay(p.display)
		if err != nil {
			return 0, 0, fmt.Errorf("connect to %s: %w", p.display, err)
		}
		p.conn, p.root = c, xproto.Setup(c).DefaultScreen(c).Root
	}
	r, err := xproto.QueryPointer(p.conn, p.root).Reply()
	if err != nil {
		p.conn.Close()
		p.conn = nil
		return 0, 0, fmt.Errorf("query pointer: %w", err)
	}
	return int(r.RootX), int(r.RootY), nil
}

// Close closes the connection.
func (p *XPointer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
}
