//go:build unix

package ledger

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrHeld means another live process holds the ledger.
var ErrHeld = errors.New("ledger: held by another process")

// acquire takes an exclusive flock on name. The kernel drops it when its
// holder dies, so a lock file left by a dead process does not block; the
// file records the holder's process id for the refusal message.
func acquire(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(name)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (process %s)", ErrHeld, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("ledger: lock: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func release(f *os.File) error {
	f.Truncate(0)
	return f.Close()
}
