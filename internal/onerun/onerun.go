// Package onerun is the lifecycle both toolsets (the computer's and the
// browser's) share: one run at a time, refused at once rather than queued,
// and a close that refuses new runs without cancelling the one in progress.
package onerun

import "sync"

// State is where a Gate is in its lifecycle. Its values are the words the
// toolsets report as their Status.
type State string

// The states of a Gate.
const (
	// Open accepts runs.
	Open State = "open"
	// Draining: closed, but a run still holds the gate and may still have
	// effects.
	Draining State = "draining"
	// Closed: closed and nothing holds the gate.
	Closed State = "closed"
)

// Gate lets one run at a time hold a toolset. The zero Gate is open.
type Gate struct {
	mu      sync.Mutex
	running bool
	closed  bool
}

// State reports whether the gate is open, draining or closed.
func (g *Gate) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !g.closed:
		return Open
	case g.running:
		return Draining
	}
	return Closed
}

// Close refuses new runs; a run holding the gate keeps it until Release.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Acquire claims the gate for one run. It fails at once with errClosed after
// Close, or with errBusy while another run holds it.
func (g *Gate) Acquire(errClosed, errBusy error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errClosed
	}
	if g.running {
		return errBusy
	}
	g.running = true
	return nil
}

// Release ends the run that holds the gate.
func (g *Gate) Release() {
	g.mu.Lock()
	g.running = false
	g.mu.Unlock()
}
