// Package ctxsleep is a sleep that a context cuts short: the pauses
// between input events and between polls, which must end with the call
// they belong to.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep sleeps for d or until ctx ends, and returns ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
