// Package poll is the tests' one way to wait for something that happens
// on its own time (a process ends, a window maps, a slot frees): ask again
// at a short interval until it holds, and fail the test, saying what was
// awaited, once a bound passes.
package poll

import (
	"testing"
	"time"
)

// interval is short against every bound the tests use and long enough not
// to busy a core of the two the tests share.
const interval = 20 * time.Millisecond

// Until fails tb unless cond holds within timeout; what names the awaited
// state in the failure ("the supervisor is gone").
func Until(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	For(tb, timeout, what, func() (struct{}, bool) { return struct{}{}, cond() })
}

// For returns f's value once f says it is the awaited one, and fails tb
// with the last value when that does not happen within timeout.
func For[T any](tb testing.TB, timeout time.Duration, what string, f func() (T, bool)) T {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, ok := f()
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting until %s (last: %v)", timeout, what, v)
		}
		time.Sleep(interval)
	}
}
