package agentd

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
)

// lease is a person's hold on the desktop (the operator role, wire
// operate.go). agentd itself enforces it, so no host-side bug can let the
// model act while a person drives: the controller's requests are refused
// (wire.CodeTakenOver), never queued, from the moment the lease is taken
// until it is handed back.
//
// Input of the controller and of the lease holder goes through
// Server.inputMu together with the lease check, so taking the lease waits
// for a running model action to end and no model action starts after it.
type lease struct {
	mu       sync.Mutex
	held     bool
	owner    *operator // nil when held by nobody connected (orphaned)
	by       string
	taken    time.Time
	orphaned bool
	actions  []string
	more     int
	// returned is closed when the lease in force ends; a new one is made
	// at each take.
	returned chan struct{}
	// controller is the controller session being served (nil between
	// sessions); sess is the one during which the lease in force was taken.
	// A hand back belongs to that session alone: pending gathers those it
	// has not collected, and is dropped when it ends (hand backs of a
	// person never reach another run's model).
	controller *session
	sess       *session
	pending    *wire.Handback
}

// operator is one operator connection; its address is its identity (a
// zero-size type's would not be).
type operator struct{ _ byte }

func (l *lease) state(op *operator) wire.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stateLocked(op)
}

func (l *lease) stateLocked(op *operator) wire.Lease {
	if !l.held {
		return wire.Lease{}
	}
	return wire.Lease{Held: true, Mine: l.owner == op && op != nil, Orphaned: l.owner == nil, By: l.by, Since: l.taken}
}

// isHeld reports whether a person holds the desktop.
func (l *lease) isHeld() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// blocks reports whether the controller session s may not act on the
// desktop: a person holds it, or handed it back and s has not collected
// that hand back yet (what s last saw of the desktop is out of date).
func (l *lease) blocks(s *session) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held || (l.pending != nil && l.controller == s)
}

// attach makes s the controller session.
func (l *lease) attach(s *session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.controller = s
}

// detach ends controller session s: the hand backs it did not collect are
// dropped (returned, for the log), and a lease taken during it will be
// handed back to nobody.
func (l *lease) detach(s *session) *wire.Handback {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.controller != s {
		return nil
	}
	dropped := l.pending
	l.controller, l.pending = nil, nil
	if l.sess == s {
		l.sess = nil
	}
	return dropped
}

// take gives op the lease: a free one, an orphaned one, or its own again.
// Another connected operator's lease is refused. A new lease belongs to
// the controller session being served, returned to be told of it (nil:
// none, or nothing new to tell).
func (l *lease) take(op *operator, by string) (*session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.held && l.owner == op:
		return nil, nil
	case l.held && l.owner != nil:
		return nil, fmt.Errorf("busy: %s holds the desktop on another connection", l.by)
	case l.held: // orphaned: the same lease goes on, with its actions
		l.owner, l.by = op, by
		return nil, nil
	}
	l.held, l.owner, l.by, l.taken, l.orphaned = true, op, by, time.Now(), false
	l.actions, l.more = nil, 0
	l.returned = make(chan struct{})
	l.sess = l.controller
	return l.sess, nil
}

// holds reports whether op holds the lease.
func (l *lease) holds(op *operator) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && l.owner == op
}

// did notes an action of the holder, in short.
func (l *lease) did(a actions.Action) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.actions) < wire.MaxHandbackActions {
		l.actions = append(l.actions, a.String())
	} else {
		l.more++
	}
}

// handBack ends op's lease, with an optional note for the model. The hand
// back goes to the controller session the lease was taken during, returned
// to be told of it; when that session has ended it is dropped (nil, true).
func (l *lease) handBack(op *operator, note string) (to *session, dropped bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || l.owner != op {
		return nil, false, fmt.Errorf("this connection does not hold the desktop: take it first")
	}
	to = l.sess
	if to == nil || to != l.controller {
		l.end()
		return nil, true, nil
	}
	hb := l.pending
	if hb == nil {
		hb = &wire.Handback{Taken: l.taken}
		l.pending = hb
	}
	hb.Leases++
	if !slices.Contains(hb.By, l.by) {
		hb.By = append(hb.By, l.by)
	}
	for _, a := range l.actions {
		if len(hb.Actions) < wire.MaxHandbackActions {
			hb.Actions = append(hb.Actions, a)
		} else {
			hb.More++
		}
	}
	hb.More += l.more
	if note != "" {
		hb.Notes = append(hb.Notes, note)
	}
	hb.Orphaned = hb.Orphaned || l.orphaned
	hb.Returned = time.Now()
	l.end()
	return to, false, nil
}

// end ends the lease in force.
func (l *lease) end() {
	l.held, l.owner, l.by, l.actions, l.more, l.orphaned, l.sess = false, nil, "", nil, 0, false, nil
	close(l.returned)
}

// leave is op's connection ending: a lease it holds stays held, orphaned,
// so the model stays paused until a person hands the desktop back. It
// reports whether op held the lease.
func (l *lease) leave(op *operator) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || l.owner != op {
		return false
	}
	l.owner, l.orphaned = nil, true
	return true
}

// await waits until no lease is held and returns the hand backs of
// controller session s since its last await (Leases 0 when there were
// none).
func (l *lease) await(ctx context.Context, s *session) (wire.Handback, error) {
	for {
		l.mu.Lock()
		if !l.held {
			var hb *wire.Handback
			if l.controller == s {
				hb, l.pending = l.pending, nil
			}
			l.mu.Unlock()
			if hb == nil {
				return wire.Handback{}, nil
			}
			return *hb, nil
		}
		returned := l.returned
		l.mu.Unlock()
		select {
		case <-returned:
		case <-ctx.Done():
			return wire.Handback{}, ctx.Err()
		}
	}
}
