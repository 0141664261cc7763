package agentd

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/wire"
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
	// pending gathers the hand backs the controller has not been told of.
	pending *wire.Handback
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

// take gives op the lease: a free one, an orphaned one, or its own again.
// Another connected operator's lease is refused.
func (l *lease) take(op *operator, by string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.held && l.owner == op:
		return nil
	case l.held && l.owner != nil:
		return fmt.Errorf("busy: %s holds the desktop on another connection", l.by)
	case l.held: // orphaned: the same lease goes on, with its actions
		l.owner, l.by = op, by
		return nil
	}
	l.held, l.owner, l.by, l.taken, l.orphaned = true, op, by, time.Now(), false
	l.actions, l.more = nil, 0
	l.returned = make(chan struct{})
	return nil
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

// handBack ends op's lease, with an optional note for the model.
func (l *lease) handBack(op *operator, note string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || l.owner != op {
		return fmt.Errorf("this connection does not hold the desktop: take it first")
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
	l.held, l.owner, l.by, l.actions, l.more, l.orphaned = false, nil, "", nil, 0, false
	close(l.returned)
	return nil
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

// await waits until no lease is held and returns the hand backs since the
// last await (Leases 0 when there were none).
func (l *lease) await(ctx context.Context) (wire.Handback, error) {
	for {
		l.mu.Lock()
		if !l.held {
			hb := l.pending
			l.pending = nil
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
