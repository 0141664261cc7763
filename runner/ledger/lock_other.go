//go:build !unix

package ledger

import (
	"errors"
	"os"
)

// ErrHeld means another live process holds the ledger.
var ErrHeld = errors.New("ledger: held by another process")

// acquire refuses: holding a ledger exclusively needs flock.
func acquire(string) (*os.File, error) {
	return nil, errors.New("ledger: exclusive ledgers need a unix system")
}

func release(f *os.File) error { return f.Close() }
