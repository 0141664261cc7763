// Package calllog is the ordered log in which test fakes record what was
// asked of them; the code under test may call them from several goroutines.
package calllog

import (
	"slices"
	"sync"
)

// Log is a list of entries safe for concurrent use; the zero Log is empty.
type Log struct {
	mu      sync.Mutex
	entries []string
}

// Add appends entry.
func (l *Log) Add(entry string) {
	l.mu.Lock()
	l.entries = append(l.entries, entry)
	l.mu.Unlock()
}

// Entries returns a copy of the log.
func (l *Log) Entries() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}
