package console

import (
	"sync"
	"time"
)

// The outcomes of a run, as the page shows them.
const (
	RunDone    = "done"
	RunFailed  = "failed"
	RunStopped = "stopped"
)

// Outcome is how the console's run ended.
type Outcome struct {
	// Status is RunDone, RunFailed or RunStopped.
	Status string `json:"status"`
	// Message is the model's final message (done); Error why the run
	// failed or stopped.
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// endGrace bounds how long Close waits, after End, for the open pages to
// read the run's end; pageFresh is how recently a page must have asked
// for the questions to count as open (it asks every half second).
const (
	endGrace  = 3 * time.Second
	pageFresh = 2 * time.Second
)

// ending is the run's end and which pages have read it. Pages name
// themselves with a random id on the questions poll.
type ending struct {
	mu      sync.Mutex
	outcome *Outcome
	at      time.Time
	pages   map[string]*page
}

type page struct {
	seen time.Time
	told bool // has shown the end
}

// End tells the open pages that the console's run ended and how: a page
// shows the outcome and stops trying to reconnect the live view and the
// take over. A question still asked is withdrawn. Close, after End, waits
// briefly for the open pages to read it.
func (s *Server) End(o Outcome) {
	s.questions.mu.Lock()
	ids := make([]string, len(s.questions.pending))
	for i, q := range s.questions.pending {
		ids[i] = q.ID
	}
	s.questions.mu.Unlock()
	for _, id := range ids {
		s.settleWhy(id, nil, "the run ended")
	}
	s.ending.mu.Lock()
	if s.ending.outcome == nil {
		s.ending.outcome, s.ending.at = &o, time.Now()
	}
	s.ending.mu.Unlock()
}

// polled notes that page id asked for the questions, and returns the
// run's end if there is one. A page that has shown the end says so (read).
func (s *Server) polled(id string, read bool) *Outcome {
	e := &s.ending
	e.mu.Lock()
	defer e.mu.Unlock()
	if id != "" {
		if e.pages == nil {
			e.pages = map[string]*page{}
		}
		p := e.pages[id]
		if p == nil {
			if len(e.pages) >= maxPages {
				return e.outcome // not tracked: Close does not wait for it
			}
			p = &page{}
			e.pages[id] = p
		}
		p.seen = time.Now()
		p.told = p.told || (read && e.outcome != nil)
	}
	return e.outcome
}

// maxPages bounds the pages the console keeps track of.
const maxPages = 64

// endRead reports whether every page that was open when the run ended has
// read the end (true too when the run has not ended).
func (s *Server) endRead() bool {
	e := &s.ending
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.outcome == nil {
		return true
	}
	for _, p := range e.pages {
		if !p.told && e.at.Sub(p.seen) < pageFresh {
			return false
		}
	}
	return true
}

// awaitEndRead waits, bounded by endGrace, until the open pages have read
// the run's end.
func (s *Server) awaitEndRead() {
	deadline := time.Now().Add(endGrace)
	for !s.endRead() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}
